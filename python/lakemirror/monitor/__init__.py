"""Table monitoring, like Fabric's: what each run records per table in the warehouse, the
publisher's `_partnerEvents.json`, and what `lakemirror status` makes of them."""

from lakemirror.monitor.partner import (
    PARTNER_EVENTS_FILE,
    PartnerInfo,
    parse_partner_events,
    read_partner,
    record_partner_events,
)
from lakemirror.monitor.pending import Landed
from lakemirror.monitor.records import (
    TableMonitor,
    applied_positions,
    downstream_positions,
    monitor_record,
    read_monitor,
    read_records,
    unrecorded_claims,
    with_recorded_folders,
    write_monitor,
)
from lakemirror.monitor.report import (
    WarehouseReport,
    read_report,
    require_warehouse,
    to_json,
    to_text,
)

__all__ = [
    "PARTNER_EVENTS_FILE", "Landed", "PartnerInfo", "TableMonitor", "WarehouseReport",
    "applied_positions", "downstream_positions", "monitor_record", "parse_partner_events",
    "read_monitor", "read_partner", "read_records", "read_report", "record_partner_events",
    "require_warehouse", "to_json",
    "to_text", "unrecorded_claims", "with_recorded_folders", "write_monitor",
]
