"""Do two transcripts say the same thing? Even in different protocols: a semantic diff as a
library (``streambridge diff`` is a thin command over it).

::

    from streambridge.diff import diff_files

    result = diff_files("golden/plain-text/oma.ndjson", "golden/plain-text/nest.sse")
    result.same                   # True: chunking and generated ids are no difference
    print("\\n".join(result.lines()))

Both files are decoded to events and normalised before comparing (:mod:`.normalise`):

* text and reasoning deltas are merged (how a model chunked its text is not its meaning); a
  merged text (or a terminal's assembled text) longer than ``TEXT_LIMIT`` characters is
  compared by its length and BLAKE2b digest and shown by its start, so memory does not grow
  with the answer;
* ids that producers generate (run, thread, turn, message, call and UI ids) are shown by their
  order of appearance (``call#1``) and compared as joins: ids first met in two events that agree
  are paired, and the pair must hold wherever either id comes back (a new random id is not a
  difference, a join that breaks is, and an extra call does not shift every later id);
* structure a codec invented (``synthetic`` steps and run starts) is dropped, and so are
  transport cursors (SSE ``id:`` lines, ``event_id``).

Across protocols only what both say natively is compared: the event types both codecs have,
and for the common ones their core fields (text, tool name and input, outputs as JSON, the
terminal's status and failure). ``exact_ids=True`` compares id values as well.

The comparison streams, in time linear in the input (:mod:`.align`): both files are decoded
chunk by chunk and their events compared in lockstep. At a difference it looks up to ``WINDOW``
events ahead on each side for the nearest point (fewest events passed over) where ``CONFIRM``
events agree again (or both streams end), and reports what lies before it as one hunk:
``delete`` (only in A), ``insert`` (only in B) or ``replace``. When one side has ended, the rest
of the other is one hunk (its first ``WINDOW`` events shown, the others counted). It stops at
``limit`` hunks.

Limits: a run of more than ``WINDOW`` inserted or deleted events, or a stretch of differences
too dense to find ``CONFIRM`` agreeing events, is reported as replaced events one at a time
until the streams agree again; ids are remembered for the last ``ID_MEMORY`` distinct ids of
each kind (an id that comes back after that counts as new, on both sides alike).

Frame numbers (:mod:`.reading`): a file is decoded in chunks cut at frame boundaries (the fast
path of every decoder), so an event is first known only by its chunk's frames. When there are
differences, a second pass re-decodes the file frame by frame in just the chunks that hold
reported events (:mod:`.result`). stdin, which cannot be read twice, is decoded frame by frame
from the start.

Memory is bounded by the difference window (the look-ahead, the reported hunks, the id
memory), not by the files; a decoder itself keeps the answer text its terminal carries and its
tool calls' ids.
"""

from __future__ import annotations

from .align import CONFIRM, WINDOW, Hunk, Mark
from .normalise import ID_MEMORY, TEXT_LIMIT, vocabulary_for
from .result import DEFAULT_MAX, DiffInputError, DiffResult, Progress, diff_files, no_progress

__all__ = [
    "CONFIRM",
    "DEFAULT_MAX",
    "ID_MEMORY",
    "TEXT_LIMIT",
    "WINDOW",
    "DiffInputError",
    "DiffResult",
    "Hunk",
    "Mark",
    "Progress",
    "diff_files",
    "no_progress",
    "vocabulary_for",
]
