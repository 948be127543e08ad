"""Session files under their old name: the recorder is engine/stream/recorder.py, the reader
engine/stream/reader.py."""

from engine.stream.reader import (  # noqa: F401
    MAX_LINE_BYTES,
    Recording,
    SessionError,
    load_session,
    parse_recording,
    parse_session_text,
    read_recording,
    read_session,
)
from engine.stream.recorder import (  # noqa: F401
    FORMAT,
    FORMAT_VERSION,
    RecordingError,
    SessionRecorder,
    check_target,
    header,
)
from engine.stream.schema import REQUIRED  # noqa: F401
