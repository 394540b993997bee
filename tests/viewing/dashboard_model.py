"""A strict model of the Grafana dashboard JSON (classic schema) subset our dashboards use.

Grafana itself cannot run on this machine, so the dashboards are validated structurally:
every key must be one this model knows (``extra="forbid"`` catches typos such as ``"pannels"``
or a ``"legendFromat"`` that Grafana would silently ignore), panels must fit the 24-column grid,
ids must be unique, and every query must name a datasource the provisioning defines.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataSourceRef(_Strict):
    type: Literal["prometheus", "jaeger"]
    uid: str


class GridPos(_Strict):
    h: int = Field(ge=1)
    w: int = Field(ge=1, le=24)
    x: int = Field(ge=0, le=23)
    y: int = Field(ge=0)


class Target(_Strict):
    datasource: DataSourceRef
    expr: str = Field(min_length=1)
    legendFormat: str
    refId: str
    range: bool = True
    instant: bool = False
    exemplar: bool = False
    format: Literal["time_series", "table", "heatmap"] | None = None


class FieldDefaults(_Strict):
    unit: str


class FieldConfig(_Strict):
    defaults: FieldDefaults
    overrides: list[Any]


PanelType = Literal[
    "timeseries", "barchart", "bargauge", "heatmap", "stat", "piechart", "table", "gauge"
]


class Panel(_Strict):
    id: int
    type: PanelType
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    datasource: DataSourceRef
    gridPos: GridPos
    targets: list[Target] = Field(min_length=1)
    fieldConfig: FieldConfig
    options: dict[str, Any]


class VariableQuery(_Strict):
    query: str
    refId: str


class Variable(_Strict):
    name: str
    label: str
    type: Literal["datasource", "query", "custom", "constant", "interval"]
    hide: int = 0
    query: VariableQuery | str
    datasource: DataSourceRef | None = None
    definition: str | None = None
    includeAll: bool = False
    multi: bool = False
    allValue: str | None = None
    refresh: int | None = None
    current: dict[str, Any] | None = None


class Templating(_Strict):
    list: list[Variable]


class Annotations(_Strict):
    list: list[dict[str, Any]]


class TimeRange(_Strict):
    from_: str = Field(alias="from")
    to: str


class DashboardLink(_Strict):
    title: str
    type: Literal["link", "dashboards"]
    url: str
    icon: str
    targetBlank: bool
    tooltip: str


class Dashboard(_Strict):
    uid: str = Field(min_length=1, max_length=40)
    title: str
    description: str
    tags: list[str]
    editable: bool
    graphTooltip: int
    refresh: str
    schemaVersion: int = Field(ge=36)
    version: int
    time: TimeRange
    timezone: str
    links: list[DashboardLink]
    annotations: Annotations
    templating: Templating
    panels: list[Panel] = Field(min_length=1)
