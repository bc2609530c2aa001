from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_RUNNING: _ClassVar[RunState]
    RUN_STATE_FINISHED: _ClassVar[RunState]
    RUN_STATE_FAILED: _ClassVar[RunState]
    RUN_STATE_LOST: _ClassVar[RunState]
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_RUNNING: RunState
RUN_STATE_FINISHED: RunState
RUN_STATE_FAILED: RunState
RUN_STATE_LOST: RunState

class RunMeta(_message.Message):
    __slots__ = ("version", "project", "run", "config_json", "tags", "group", "started_ns", "host", "pid", "git_commit", "git_dirty", "python_version", "frameworks", "data_version", "producer_id", "client_version", "name", "resumes", "summary_json", "session", "notes")
    class FrameworksEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    STARTED_NS_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    GIT_DIRTY_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORKS_FIELD_NUMBER: _ClassVar[int]
    DATA_VERSION_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESUMES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_JSON_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    version: int
    project: str
    run: str
    config_json: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    group: str
    started_ns: int
    host: str
    pid: int
    git_commit: str
    git_dirty: bool
    python_version: str
    frameworks: _containers.ScalarMap[str, str]
    data_version: str
    producer_id: bytes
    client_version: str
    name: str
    resumes: _containers.RepeatedCompositeFieldContainer[Resume]
    summary_json: str
    session: bytes
    notes: str
    def __init__(self, version: _Optional[int] = ..., project: _Optional[str] = ..., run: _Optional[str] = ..., config_json: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., group: _Optional[str] = ..., started_ns: _Optional[int] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., git_commit: _Optional[str] = ..., git_dirty: _Optional[bool] = ..., python_version: _Optional[str] = ..., frameworks: _Optional[_Mapping[str, str]] = ..., data_version: _Optional[str] = ..., producer_id: _Optional[bytes] = ..., client_version: _Optional[str] = ..., name: _Optional[str] = ..., resumes: _Optional[_Iterable[_Union[Resume, _Mapping]]] = ..., summary_json: _Optional[str] = ..., session: _Optional[bytes] = ..., notes: _Optional[str] = ...) -> None: ...

class Resume(_message.Message):
    __slots__ = ("started_ns", "after_step", "after_step_known", "went_back", "back_to_step")
    STARTED_NS_FIELD_NUMBER: _ClassVar[int]
    AFTER_STEP_FIELD_NUMBER: _ClassVar[int]
    AFTER_STEP_KNOWN_FIELD_NUMBER: _ClassVar[int]
    WENT_BACK_FIELD_NUMBER: _ClassVar[int]
    BACK_TO_STEP_FIELD_NUMBER: _ClassVar[int]
    started_ns: int
    after_step: int
    after_step_known: bool
    went_back: bool
    back_to_step: int
    def __init__(self, started_ns: _Optional[int] = ..., after_step: _Optional[int] = ..., after_step_known: _Optional[bool] = ..., went_back: _Optional[bool] = ..., back_to_step: _Optional[int] = ...) -> None: ...

class RunStatus(_message.Message):
    __slots__ = ("version", "project", "run", "state", "reason", "updated_ns", "producer_id", "last_seq", "session")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    UPDATED_NS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    project: str
    run: str
    state: RunState
    reason: str
    updated_ns: int
    producer_id: bytes
    last_seq: int
    session: bytes
    def __init__(self, version: _Optional[int] = ..., project: _Optional[str] = ..., run: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., reason: _Optional[str] = ..., updated_ns: _Optional[int] = ..., producer_id: _Optional[bytes] = ..., last_seq: _Optional[int] = ..., session: _Optional[bytes] = ...) -> None: ...

class SeqRange(_message.Message):
    __slots__ = ("first", "last")
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    first: int
    last: int
    def __init__(self, first: _Optional[int] = ..., last: _Optional[int] = ...) -> None: ...

class Commit(_message.Message):
    __slots__ = ("producer_id", "stored", "committed_ns", "bridge_id", "rejected", "dropped")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_NS_FIELD_NUMBER: _ClassVar[int]
    BRIDGE_ID_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    producer_id: bytes
    stored: _containers.RepeatedCompositeFieldContainer[SeqRange]
    committed_ns: int
    bridge_id: str
    rejected: _containers.RepeatedCompositeFieldContainer[SeqRange]
    dropped: _containers.RepeatedCompositeFieldContainer[Dropped]
    def __init__(self, producer_id: _Optional[bytes] = ..., stored: _Optional[_Iterable[_Union[SeqRange, _Mapping]]] = ..., committed_ns: _Optional[int] = ..., bridge_id: _Optional[str] = ..., rejected: _Optional[_Iterable[_Union[SeqRange, _Mapping]]] = ..., dropped: _Optional[_Iterable[_Union[Dropped, _Mapping]]] = ...) -> None: ...

class Dropped(_message.Message):
    __slots__ = ("batches", "points", "reason")
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    batches: SeqRange
    points: int
    reason: str
    def __init__(self, batches: _Optional[_Union[SeqRange, _Mapping]] = ..., points: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...
