#!/usr/bin/env bash
# Build the two relocated jars the PyPI Iceberg runtime (snowpark-connect-deps-iceberg) lacks, for Spark
# without Maven access (lakekeeper_host/engines/spark.py, jars_mode offline). Output: $1, default the per-user
# cache ~/.cache/lakekeeper/jars/spark-jars, where lakekeeper_host.engines.spark finds them.
# Needs: apt-get install -y libjarjar-java zip unzip; Java; pyspark==3.5.9 in $PYTHON (default: python3).
# httpclient5 >= 5.4 comes from Debian sid packages fetched into a private apt folder (bookworm's 5.2.1 lacks
# TlsSocketStrategy); the system's apt configuration is not touched.
set -euo pipefail
OUT=${1:-$HOME/.cache/lakekeeper/jars/spark-jars}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PYSPARK_JARS=$("$PYTHON" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')

relocate() {  # relocate <rule-pattern> <target-package> <output-jar> <input-jar>...
    local pattern=$1 target=$2 output=$3; shift 3
    local tree="$WORK/tree-$(basename "$output")"
    mkdir -p "$tree"
    for jar in "$@"; do (cd "$tree" && unzip -o -q "$jar" -x 'META-INF/*'); done
    (cd "$tree" && zip -q -r "$WORK/merged.jar" .)
    echo "rule $pattern $target.@1" > "$WORK/rules"
    java -jar /usr/share/java/jarjar.jar process "$WORK/rules" "$WORK/merged.jar" "$output"
    rm -f "$WORK/merged.jar"
}

# Jackson as pyspark ships it (2.15.x: core, databind, annotations, jsr310)
relocate 'com.fasterxml.jackson.**' org.apache.iceberg.shaded.com.fasterxml.jackson "$OUT/iceberg-shaded-jackson.jar" \
    "$PYSPARK_JARS"/jackson-core-2*.jar "$PYSPARK_JARS"/jackson-databind-2*.jar \
    "$PYSPARK_JARS"/jackson-annotations-2*.jar "$PYSPARK_JARS"/jackson-datatype-jsr310-2*.jar

# httpclient5 / httpcore5 from Debian sid
APT="$WORK/apt"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial"
MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || echo http://deb.debian.org/debian)
echo "deb $MIRROR sid main" > "$APT/sources.list"
APT_OPTS=(-o Dir::Etc::sourcelist="$APT/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$APT/lists"
          -o Dir::Cache="$APT/cache")
apt-get "${APT_OPTS[@]}" update -qq
(cd "$WORK" && apt-get "${APT_OPTS[@]}" download libhttpclient5-java libhttpcore5-java)
for deb in "$WORK"/*.deb; do dpkg-deb -x "$deb" "$WORK/debs"; done
relocate 'org.apache.hc.**' org.apache.iceberg.shaded.org.apache.hc "$OUT/iceberg-shaded-httpclient5.jar" \
    "$WORK"/debs/usr/share/java/httpclient5-5*.jar "$WORK"/debs/usr/share/java/httpcore5-5*.jar \
    "$WORK"/debs/usr/share/java/httpcore5-h2-5*.jar
ls -la "$OUT"
