"""A small publisher simulator: writes a demo landing zone the way a CDC source would."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.contract import ROW_MARKER
from lakemirror.landing import sequence_file_name


class Publisher:
    """Writes `_metadata.json` and numbered change files for the tables of one landing zone."""

    def __init__(self, zone: Path) -> None:
        self.zone = zone

    def create_table(self, folder: str, key_columns: Sequence[str]) -> None:
        path = self.zone / folder
        path.mkdir(parents=True, exist_ok=True)
        (path / "_metadata.json").write_text(json.dumps({"keyColumns": list(key_columns)}))

    def publish(self, folder: str, rows: Sequence[dict[str, Any]], schema: pa.Schema) -> Path:
        """Write the next numbered file of `folder` (with __rowMarker__ if the schema has it)."""
        path = self.zone / folder
        processed = path / "_ProcessedFiles"
        numbers = [int(file.stem) for folder_ in (path, processed) if folder_.exists()
                   for file in folder_.glob("*.parquet") if file.stem.isdigit()]
        target = path / sequence_file_name(max(numbers, default=0) + 1)
        table = pa.Table.from_pylist(list(rows), schema=schema)
        pq.write_table(table, target)
        return target


EMPLOYEE = pa.schema([("EmployeeID", pa.string()), ("EmployeeName", pa.string()),
                      ("EmployeeLocation", pa.string())])
CUSTOMER = pa.schema([("CustomerID", pa.int64()), ("Name", pa.string()),
                      ("Country", pa.string())])
ORDER_LINE = pa.schema([("OrderID", pa.int64()), ("LineNumber", pa.int32()),
                        ("CustomerID", pa.int64()), ("Product", pa.string()),
                        ("Amount", pa.float64())])


def with_marker(schema: pa.Schema) -> pa.Schema:
    return schema.append(pa.field(ROW_MARKER, pa.int32()))


def initial_load(publisher: Publisher) -> None:
    """File 1 of each table: an initial load without __rowMarker__ (all inserts)."""
    publisher.create_table("Employees", ["EmployeeID"])
    publisher.create_table("Customers", ["CustomerID"])
    publisher.create_table("Sales.schema/OrderLines", ["OrderID", "LineNumber"])
    publisher.publish("Employees", [
        {"EmployeeID": "E0001", "EmployeeName": "Ada", "EmployeeLocation": "Redmond"},
        {"EmployeeID": "E0003", "EmployeeName": "Grace", "EmployeeLocation": "Seattle"},
    ], EMPLOYEE)
    publisher.publish("Customers", [
        {"CustomerID": i, "Name": name, "Country": country}
        for i, (name, country) in enumerate(
            [("Contoso", "US"), ("Fabrikam", "DE"), ("Tailspin", "FR"), ("Litware", "US")], 1)
    ], CUSTOMER)
    publisher.publish("Sales.schema/OrderLines", [
        {"OrderID": 100, "LineNumber": 1, "CustomerID": 1, "Product": "Bike", "Amount": 500.0},
        {"OrderID": 100, "LineNumber": 2, "CustomerID": 1, "Product": "Helmet", "Amount": 50.0},
        {"OrderID": 101, "LineNumber": 1, "CustomerID": 2, "Product": "Lamp", "Amount": 20.0},
    ], ORDER_LINE)


def incremental_changes(publisher: Publisher) -> None:
    """Files 2..n: inserts, updates, deletes, upserts and a key change."""
    employee = with_marker(EMPLOYEE)
    publisher.publish("Employees", [  # Redmond → Bellevue, then key change E0001 → E0002
        {"EmployeeID": "E0001", "EmployeeName": "Ada", "EmployeeLocation": "Bellevue",
         ROW_MARKER: 1},
    ], employee)
    publisher.publish("Employees", [
        {"EmployeeID": "E0001", ROW_MARKER: 2},
        {"EmployeeID": "E0002", "EmployeeName": "Ada", "EmployeeLocation": "Bellevue",
         ROW_MARKER: 0},
        {"EmployeeID": "E0004", "EmployeeName": "Alan", "EmployeeLocation": "Redmond",
         ROW_MARKER: 4},
    ], employee)
    customer = with_marker(CUSTOMER)
    publisher.publish("Customers", [
        {"CustomerID": 5, "Name": "Northwind", "Country": "UK", ROW_MARKER: 0},
        {"CustomerID": 3, "Name": "Tailspin Toys", "Country": "FR", ROW_MARKER: 1},
        {"CustomerID": 3, "Name": "Tailspin Toys SA", "Country": "FR", ROW_MARKER: 4},
        {"CustomerID": 4, ROW_MARKER: 2},
    ], customer)
    order_line = with_marker(ORDER_LINE)
    publisher.publish("Sales.schema/OrderLines", [
        {"OrderID": 102, "LineNumber": 1, "CustomerID": 5, "Product": "Tent", "Amount": 300.0,
         ROW_MARKER: 0},
        {"OrderID": 100, "LineNumber": 2, ROW_MARKER: 2},
        {"OrderID": 101, "LineNumber": 1, "CustomerID": 2, "Product": "Lamp", "Amount": 25.0,
         ROW_MARKER: 4},
    ], order_line)
