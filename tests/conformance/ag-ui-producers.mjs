// Real AG-UI producer output: realistic runs written event by event with @ag-ui/encoder's
// `EventEncoder` (the TypeScript SDK's server-side SSE writer), as an agent server would.
// Prints [{name, sse}] as JSON on stdout. tests/test_conformance_ag_ui.py decodes each with
// streambridge's `ag-ui` codec; tests/agui_models.py writes the same runs with the Python SDK
// (the same bytes, but for the member order of timestamps-and-metadata).
import { EventType as T } from "@ag-ui/core";
import { EventEncoder } from "@ag-ui/encoder";

const thread = { threadId: "thread-producer", runId: "run-1" };
const started = { type: T.RUN_STARTED, ...thread };
const finished = { type: T.RUN_FINISHED, ...thread };

const text = (id, ...deltas) => [
  { type: T.TEXT_MESSAGE_START, messageId: id, role: "assistant" },
  ...deltas.map((delta) => ({ type: T.TEXT_MESSAGE_CONTENT, messageId: id, delta })),
  { type: T.TEXT_MESSAGE_END, messageId: id },
];

const call = [
  { type: T.TOOL_CALL_START, toolCallId: "call-1", toolCallName: "getWeather", parentMessageId: "msg-1" },
  { type: T.TOOL_CALL_ARGS, toolCallId: "call-1", delta: '{"city":' },
  { type: T.TOOL_CALL_ARGS, toolCallId: "call-1", delta: '"Paris"}' },
  { type: T.TOOL_CALL_END, toolCallId: "call-1" },
];

const RUNS = {
  text: [started, ...text("msg-1", "Hello", ", wörld ", "☀️ — done."), finished],
  "tool-call": [
    started,
    ...text("msg-1", "Let me check the weather."),
    ...call,
    { type: T.TOOL_CALL_RESULT, messageId: "tool-msg-1", toolCallId: "call-1", content: '{"tempC":21}', role: "tool" },
    ...text("msg-2", "It is 21 °C in Paris."),
    { ...finished, result: { answered: true } },
  ],
  reasoning: [
    started,
    { type: T.REASONING_START, messageId: "reason-1" },
    { type: T.REASONING_MESSAGE_START, messageId: "reason-msg-1", role: "reasoning" },
    { type: T.REASONING_MESSAGE_CONTENT, messageId: "reason-msg-1", delta: "The user wants a haiku; " },
    { type: T.REASONING_MESSAGE_CONTENT, messageId: "reason-msg-1", delta: "five, seven, five." },
    { type: T.REASONING_MESSAGE_END, messageId: "reason-msg-1" },
    { type: T.REASONING_END, messageId: "reason-1" },
    ...text("msg-1", "Old pond, a frog jumps."),
    finished,
  ],
  "state-and-steps": [
    started,
    { type: T.STEP_STARTED, stepName: "plan" },
    { type: T.STATE_SNAPSHOT, snapshot: { todos: [], status: "planning" } },
    {
      type: T.STATE_DELTA,
      delta: [
        { op: "add", path: "/todos/-", value: { title: "Buy milk", done: false } },
        { op: "replace", path: "/status", value: "ready" },
      ],
    },
    { type: T.STEP_FINISHED, stepName: "plan" },
    ...text("msg-1", "Added one todo."),
    finished,
  ],
  "run-error": [
    started,
    { type: T.TEXT_MESSAGE_START, messageId: "msg-1", role: "assistant" },
    { type: T.TEXT_MESSAGE_CONTENT, messageId: "msg-1", delta: "Half an ans" },
    { type: T.RUN_ERROR, message: "The model provider timed out.", code: "provider_timeout" },
  ],
  interrupt: [
    started,
    ...text("msg-1", "I need your approval to call the tool."),
    ...call,
    {
      ...finished,
      outcome: {
        type: "interrupt",
        interrupts: [{ id: "int-1", reason: "tool_approval", message: "Run it?", toolCallId: "call-1" }],
      },
    },
  ],
  custom: [
    started,
    { type: T.CUSTOM, name: "acme.progress", value: { percent: 40, label: "indexing" } },
    ...text("msg-1", "Indexed."),
    { type: T.CUSTOM, name: "acme.done", value: null },
    finished,
  ],
  cancelled: [
    started,
    ...text("msg-1", "Stopping here."),
    { ...finished, outcome: { type: "cancelled" } },
  ],
  "frontend-tool": [
    started,
    ...call,
    { ...finished, outcome: { type: "success", pendingToolCallIds: ["call-1"] } },
  ],
  "timestamps-and-metadata": [
    { ...started, timestamp: 1767225600000 },
    { type: T.TEXT_MESSAGE_START, messageId: "msg-1", role: "assistant", timestamp: 1767225600001 },
    { type: T.TEXT_MESSAGE_CONTENT, messageId: "msg-1", delta: "Hi.", metadata: { "acme.trace": "t-1" } },
    { type: T.TEXT_MESSAGE_END, messageId: "msg-1", timestamp: 1767225600002 },
    {
      ...finished,
      timestamp: 1767225600003,
      usage: [{ provider: "openai", model: "gpt-4.1", inputTokens: 12, outputTokens: 3, totalTokens: 15 }],
    },
  ],
  chunks: [
    started,
    { type: T.TEXT_MESSAGE_CHUNK, messageId: "msg-1", role: "assistant", delta: "Checking " },
    { type: T.TEXT_MESSAGE_CHUNK, delta: "the time." },
    { type: T.TOOL_CALL_CHUNK, toolCallId: "call-1", toolCallName: "getTime", parentMessageId: "msg-1", delta: '{"tz":' },
    { type: T.TOOL_CALL_CHUNK, delta: '"UTC"}' },
    { type: T.TOOL_CALL_RESULT, messageId: "tool-msg-1", toolCallId: "call-1", content: "10:00", role: "tool" },
    { type: T.TEXT_MESSAGE_CHUNK, messageId: "msg-2", delta: "It is 10:00 UTC." },
    finished,
  ],
};

const encoder = new EventEncoder();
const out = Object.entries(RUNS).map(([name, events]) => ({
  name,
  sse: events.map((event) => encoder.encodeSSE(event)).join(""),
}));
process.stdout.write(JSON.stringify(out));
