from curvestream_wire.v1 import run_pb2 as _run_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Batch(_message.Message):
    __slots__ = ("version", "producer_id", "seq", "project", "run", "scalars", "histograms", "texts", "sealed_ns", "meta", "status", "sent_ns", "alerts")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SCALARS_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAMS_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    SEALED_NS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SENT_NS_FIELD_NUMBER: _ClassVar[int]
    ALERTS_FIELD_NUMBER: _ClassVar[int]
    version: int
    producer_id: bytes
    seq: int
    project: str
    run: str
    scalars: _containers.RepeatedCompositeFieldContainer[Series]
    histograms: _containers.RepeatedCompositeFieldContainer[Histogram]
    texts: _containers.RepeatedCompositeFieldContainer[TextRecord]
    sealed_ns: int
    meta: _run_pb2.RunMeta
    status: _run_pb2.RunStatus
    sent_ns: int
    alerts: _containers.RepeatedCompositeFieldContainer[CodeAlert]
    def __init__(self, version: _Optional[int] = ..., producer_id: _Optional[bytes] = ..., seq: _Optional[int] = ..., project: _Optional[str] = ..., run: _Optional[str] = ..., scalars: _Optional[_Iterable[_Union[Series, _Mapping]]] = ..., histograms: _Optional[_Iterable[_Union[Histogram, _Mapping]]] = ..., texts: _Optional[_Iterable[_Union[TextRecord, _Mapping]]] = ..., sealed_ns: _Optional[int] = ..., meta: _Optional[_Union[_run_pb2.RunMeta, _Mapping]] = ..., status: _Optional[_Union[_run_pb2.RunStatus, _Mapping]] = ..., sent_ns: _Optional[int] = ..., alerts: _Optional[_Iterable[_Union[CodeAlert, _Mapping]]] = ...) -> None: ...

class Series(_message.Message):
    __slots__ = ("key", "steps", "wall_ns", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    WALL_NS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    steps: _containers.RepeatedScalarFieldContainer[int]
    wall_ns: _containers.RepeatedScalarFieldContainer[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, key: _Optional[str] = ..., steps: _Optional[_Iterable[int]] = ..., wall_ns: _Optional[_Iterable[int]] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class Histogram(_message.Message):
    __slots__ = ("key", "step", "wall_ns", "bucket_edges", "counts", "min", "max", "sum", "count")
    KEY_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_NS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_EDGES_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    key: str
    step: int
    wall_ns: int
    bucket_edges: _containers.RepeatedScalarFieldContainer[float]
    counts: _containers.RepeatedScalarFieldContainer[float]
    min: float
    max: float
    sum: float
    count: int
    def __init__(self, key: _Optional[str] = ..., step: _Optional[int] = ..., wall_ns: _Optional[int] = ..., bucket_edges: _Optional[_Iterable[float]] = ..., counts: _Optional[_Iterable[float]] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., sum: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class TextRecord(_message.Message):
    __slots__ = ("key", "step", "wall_ns", "text", "level")
    KEY_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_NS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    key: str
    step: int
    wall_ns: int
    text: str
    level: int
    def __init__(self, key: _Optional[str] = ..., step: _Optional[int] = ..., wall_ns: _Optional[int] = ..., text: _Optional[str] = ..., level: _Optional[int] = ...) -> None: ...

class CodeAlert(_message.Message):
    __slots__ = ("title", "text", "level", "step", "wall_ns")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_NS_FIELD_NUMBER: _ClassVar[int]
    title: str
    text: str
    level: str
    step: int
    wall_ns: int
    def __init__(self, title: _Optional[str] = ..., text: _Optional[str] = ..., level: _Optional[str] = ..., step: _Optional[int] = ..., wall_ns: _Optional[int] = ...) -> None: ...
