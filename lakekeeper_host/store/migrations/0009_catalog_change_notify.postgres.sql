-- Every server process keeps loadTable/loadView lookups in memory only while it hears of each
-- change to the rows they come from (store/changes.py). A change to a warehouse, namespace or
-- tabular row announces its warehouse id on the channel lakekeeper_catalog_changes; PostgreSQL
-- delivers it when the transaction commits and folds repeats within one transaction. The
-- functions name the column (not to_jsonb(NEW)), so a commit never copies the metadata text.
CREATE OR REPLACE FUNCTION lakekeeper_notify_warehouse_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lakekeeper_catalog_changes', OLD.id);
    ELSE
        PERFORM pg_notify('lakekeeper_catalog_changes', NEW.id);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lakekeeper_notify_catalog_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lakekeeper_catalog_changes', OLD.warehouse_id);
    ELSE
        PERFORM pg_notify('lakekeeper_catalog_changes', NEW.warehouse_id);
        IF TG_OP = 'UPDATE' AND NEW.warehouse_id IS DISTINCT FROM OLD.warehouse_id THEN
            PERFORM pg_notify('lakekeeper_catalog_changes', OLD.warehouse_id);
        END IF;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER warehouse_change_notify AFTER INSERT OR UPDATE OR DELETE ON warehouse
    FOR EACH ROW EXECUTE FUNCTION lakekeeper_notify_warehouse_change();
CREATE TRIGGER namespace_change_notify AFTER INSERT OR UPDATE OR DELETE ON namespace
    FOR EACH ROW EXECUTE FUNCTION lakekeeper_notify_catalog_change();
CREATE TRIGGER tabular_change_notify AFTER INSERT OR UPDATE OR DELETE ON tabular
    FOR EACH ROW EXECUTE FUNCTION lakekeeper_notify_catalog_change();
