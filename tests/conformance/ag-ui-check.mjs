// Judges AG-UI SSE streams with the real published AG-UI TypeScript client (@ag-ui/client,
// @ag-ui/core). Reads a JSON batch on stdin, [{name, sse, piece?}], and prints one result per
// item, in order, as JSON on stdout:
//
//   {name, ok, events, types, schemaErrors, error?, verified, verifiedTypes, warnings,
//    agent: {error?, messages, state, result?, outcome?, interrupts?, pendingToolCallIds?, runErrors}}
//
// For each item:
// 1. transport: the body is served, in `piece`-byte pieces (default 7: boundaries fall
//    mid-frame and mid-character), as a `text/event-stream` Response to the client's own
//    `runHttpRequest` + `transformHttpEventStream` (its SSE parser: `data:` lines joined, comments,
//    `event:`, `id:` and `retry:` ignored, one JSON object per event with a string `type`);
// 2. schemaErrors: every parsed event against @ag-ui/core's zod `EventSchemas` (the discriminated
//    union the client enforces with), [{index, type, issues}];
// 3. error: the events, as `from(events)`, through the client's own stage order:
//    `enforceEvents()` (unknown events dropped and unknown fields stripped, each with a warning;
//    malformed known fields fatal), `transformChunks()` (the *_CHUNK forms expanded) and
//    `verifyEvents()` (the lifecycle and open/close discipline). `verified` counts what came out;
// 4. agent: the whole client, an `HttpAgent` whose `fetch` returns the body, run with
//    `runAgent()`: the compatibility boundary, the same stages and `defaultApplyEvents`, which
//    folds the events into the messages and state an application would show.
// Everything the client printed with console.warn / console.error is in `warnings`.
// `ok` is true when the transport, the schemas, the verifier and the agent all accepted the
// stream and nothing was warned about.
import { HttpAgent, enforceEvents, runHttpRequest, transformChunks, transformHttpEventStream, verifyEvents } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";

const PIECE = 7;

function response(sse, piece) {
  const bytes = new TextEncoder().encode(sse);
  const body = new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += piece) controller.enqueue(bytes.slice(at, at + piece));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function message(error) {
  return error instanceof Error ? error.message : String(error);
}

/** Runs `work` with console.warn / console.error collected into `sink`. */
async function capturing(sink, work) {
  const { warn, error } = console;
  console.warn = (...args) => sink.push(args.map(message).join(" "));
  console.error = (...args) => sink.push(args.map(message).join(" "));
  try {
    return await work();
  } finally {
    Object.assign(console, { warn, error });
  }
}

async function parse(sse, piece) {
  const events = transformHttpEventStream(runHttpRequest(async () => response(sse, piece)));
  return lastValueFrom(events.pipe(toArray()), { defaultValue: [] });
}

function schemaErrors(events) {
  const errors = [];
  events.forEach((event, index) => {
    const checked = EventSchemas.safeParse(event);
    if (!checked.success) {
      const issues = checked.error.issues.map((i) => `${i.path.join(".") || "(event)"}: ${i.message}`);
      errors.push({ index, type: event?.type ?? null, issues });
    }
  });
  return errors;
}

async function verify(events) {
  const out = from(events).pipe(enforceEvents(), transformChunks(), verifyEvents(), toArray());
  return lastValueFrom(out, { defaultValue: [] });
}

async function runAgent(sse, piece) {
  const agent = new HttpAgent({ url: "http://streambridge.invalid/agent", fetch: async () => response(sse, piece) });
  const report = { runErrors: [] };
  const subscriber = {
    onRunFinishedEvent(params) {
      report.outcome = params.outcome;
      if (params.outcome === "success") {
        report.result = params.result;
        report.pendingToolCallIds = params.pendingToolCallIds;
      }
      if (params.outcome === "interrupt") report.interrupts = params.interrupts;
    },
    onRunErrorEvent({ event }) {
      report.runErrors.push({ message: event.message, code: event.code });
    },
  };
  try {
    await agent.runAgent({}, subscriber);
  } catch (error) {
    report.error = message(error);
  }
  return { ...report, messages: agent.messages, state: agent.state };
}

async function check({ name, sse, piece = PIECE }) {
  const warnings = [];
  const result = { name, ok: false, events: 0, types: [], schemaErrors: [], verified: 0, verifiedTypes: [], warnings };
  let events;
  try {
    events = await capturing(warnings, () => parse(sse, piece));
  } catch (error) {
    result.error = `transport: ${message(error)}`;
    return result;
  }
  result.events = events.length;
  result.types = events.map((e) => e.type);
  result.schemaErrors = schemaErrors(events);
  try {
    const verified = await capturing(warnings, () => verify(events));
    result.verified = verified.length;
    result.verifiedTypes = verified.map((e) => e.type);
  } catch (error) {
    result.error = message(error);
  }
  result.agent = await capturing(warnings, () => runAgent(sse, piece));
  result.ok =
    result.error === undefined &&
    result.schemaErrors.length === 0 &&
    result.agent.error === undefined &&
    warnings.length === 0;
  return result;
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const batch = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = [];
for (const item of batch) results.push(await check(item));
process.stdout.write(JSON.stringify(results));
