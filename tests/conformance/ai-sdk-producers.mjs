#!/usr/bin/env node
// Real producer output: UI message stream bodies written by the REAL published AI SDK servers.
//
// For each `ai` release (7.x as `ai`, the newest 5.x and 6.x as `ai5` / `ai6`):
//   <v>-streamText-tools     `streamText` over the mock language model of `ai/test` (ai 7:
//                            MockLanguageModelV4; ai 6: MockLanguageModelV3; ai 5:
//                            MockLanguageModelV2), two steps: reasoning, text and two tool calls
//                            (one tool executes, one throws), then text; sent with
//                            `toUIMessageStreamResponse()`, messageMetadata on start and finish
//   <v>-streamText-error     the model's stream fails mid-text: the `error` chunk the server writes
//   <v>-uiMessageStream-data `createUIMessageStream` + `createUIMessageStreamResponse`: text parts,
//                            a transient `data-progress` part, and a `data-weather` part with an
//                            id written twice (loading, then done) so the client reconciles it
// The model streams come from `simulateReadableStream` with no delays.
//
// Usage:   node ai-sdk-producers.mjs          stdout: JSON {name: body (the response text)}
// Each body is the Response's text, exactly as the server would send it; `headers` of each
// response are checked here to be the UI message stream headers (a mismatch fails the harness).

import { z } from "zod";

const RELEASES = [
  { tag: "ai7", pkg: "ai", mock: "MockLanguageModelV4", spec: "v4" },
  { tag: "ai6", pkg: "ai6", mock: "MockLanguageModelV3", spec: "v3" },
  { tag: "ai5", pkg: "ai5", mock: "MockLanguageModelV2", spec: "v2" },
];

function usage(spec) {
  if (spec === "v2") return { inputTokens: 3, outputTokens: 10, totalTokens: 13 };
  return {
    inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 10, text: 10, reasoning: undefined },
  };
}

function finishReason(spec, unified) {
  return spec === "v2" ? unified : { unified, raw: unified };
}

function stepOne(spec) {
  return [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-1", modelId: "mock-model", timestamp: new Date(0) },
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "The user wants " },
    { type: "reasoning-delta", id: "r1", delta: "the weather." },
    { type: "reasoning-end", id: "r1" },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Let me check " },
    { type: "text-delta", id: "t1", delta: "Paris — ☀️?" },
    { type: "text-end", id: "t1" },
    { type: "tool-input-start", id: "call-weather", toolName: "getWeather" },
    { type: "tool-input-delta", id: "call-weather", delta: '{"city":' },
    { type: "tool-input-delta", id: "call-weather", delta: '"Paris"}' },
    { type: "tool-input-end", id: "call-weather" },
    { type: "tool-call", toolCallId: "call-weather", toolName: "getWeather", input: '{"city":"Paris"}' },
    { type: "tool-call", toolCallId: "call-broken", toolName: "brokenTool", input: '{"n":1}' },
    { type: "finish", finishReason: finishReason(spec, "tool-calls"), usage: usage(spec) },
  ];
}

function stepTwo(spec) {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t2" },
    { type: "text-delta", id: "t2", delta: "It is 21 °C in Paris." },
    { type: "text-end", id: "t2" },
    { type: "finish", finishReason: finishReason(spec, "stop"), usage: usage(spec) },
  ];
}

function failing(spec) {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Half an ans" },
    { type: "error", error: new Error("provider exploded") },
  ];
}

function checkHeaders(name, response) {
  const want = {
    "content-type": "text/event-stream",
    "x-vercel-ai-ui-message-stream": "v1",
  };
  for (const [key, value] of Object.entries(want)) {
    if (response.headers.get(key) !== value) {
      throw new Error(`${name}: header ${key} is ${response.headers.get(key)}, expected ${value}`);
    }
  }
}

async function produce({ tag, pkg, mock, spec }) {
  const ai = await import(pkg);
  const testing = await import(`${pkg}/test`);
  const Mock = testing[mock];
  if (Mock === undefined) throw new Error(`${pkg}/test has no ${mock}`);
  const stream = (chunks) => ({ stream: ai.simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) });
  const out = {};

  // (a) streamText with tools, two steps.
  const model = new Mock({ doStream: [stream(stepOne(spec)), stream(stepTwo(spec))] });
  const tools = {
    getWeather: ai.tool({
      description: "The weather in a city.",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, tempC: 21 }),
    }),
    brokenTool: ai.tool({
      description: "Always fails.",
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        throw new Error("tool exploded");
      },
    }),
  };
  const text = ai.streamText({ model, tools, prompt: "Weather in Paris?", stopWhen: ai.stepCountIs(2) });
  let name = `${tag}-streamText-tools`;
  let response = text.toUIMessageStreamResponse({
    generateMessageId: () => "msg-producer",
    messageMetadata: ({ part }) => (part.type === "start" || part.type === "finish" ? { producer: tag, at: part.type } : undefined),
    onError: (error) => (error instanceof Error ? error.message : String(error)),
  });
  checkHeaders(name, response);
  out[name] = await response.text();

  // (a') streamText whose model fails: the server's `error` chunk (default masking).
  const broken = new Mock({ doStream: [stream(failing(spec))] });
  const failed = ai.streamText({ model: broken, prompt: "Anything", onError: () => {} });
  name = `${tag}-streamText-error`;
  response = failed.toUIMessageStreamResponse();
  checkHeaders(name, response);
  out[name] = await response.text();

  // (b) createUIMessageStream with text and data parts.
  const ui = ai.createUIMessageStream({
    execute: async ({ writer }) => {
      writer.write({ type: "start", messageId: "msg-data" });
      writer.write({ type: "start-step" });
      writer.write({ type: "data-weather", id: "weather-1", data: { city: "Paris", status: "loading" } });
      writer.write({ type: "data-progress", data: { percent: 50 }, transient: true });
      writer.write({ type: "text-start", id: "txt-1" });
      writer.write({ type: "text-delta", id: "txt-1", delta: "Fetching… " });
      writer.write({ type: "text-delta", id: "txt-1", delta: "done: 21 °C." });
      writer.write({ type: "text-end", id: "txt-1" });
      writer.write({ type: "data-weather", id: "weather-1", data: { city: "Paris", status: "done", tempC: 21 } });
      writer.write({ type: "data-note", data: ["no id", 1, null] });
      writer.write({ type: "finish-step" });
      writer.write({ type: "finish" });
    },
  });
  name = `${tag}-uiMessageStream-data`;
  response = ai.createUIMessageStreamResponse({ stream: ui });
  checkHeaders(name, response);
  out[name] = await response.text();
  return out;
}

async function main() {
  const only = process.argv.slice(2);
  const bodies = {};
  for (const release of RELEASES) {
    if (only.length && !only.includes(release.tag)) continue;
    Object.assign(bodies, await produce(release));
  }
  process.stdout.write(JSON.stringify(bodies));
  process.stdout.write("\n");
}

main().catch((error) => {
  process.stderr.write(`ai-sdk-producers harness failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
