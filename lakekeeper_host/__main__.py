import sys

from lakekeeper_host.cli import main

sys.exit(main())
