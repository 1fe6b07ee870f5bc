#!/usr/bin/env node
// Conformance harness: run ai-sdk UI message streams through the REAL published AI SDK client.
//
// Each body is served, unmodified, to the `DefaultChatTransport` of the chosen `ai` release,
// exactly as a server answers `POST /api/chat`: a mocked `fetch` returns a `Response` with status
// 200 and the `uiMessageStreamHeaders`, whose body is a ReadableStream delivering the bytes in
// 7-byte pieces (so frames, and multi-byte UTF-8 characters, are split across reads). The
// transport parses the SSE with the SDK's own `parseJsonEventStream` and validates every chunk
// against that release's `uiMessageChunkSchema`; its first validation error ends the stream, as in
// `useChat`. The chunks it delivers are folded through that release's `readUIMessageStream`, which
// builds the UIMessage the way `useChat` does, so ordering errors (`UIMessageStreamError`,
// `No tool invocation found for tool call ID "…"`) surface. The same body is also parsed once more
// with `parseJsonEventStream` + `uiMessageChunkSchema` to record EVERY invalid chunk, not only the
// first.
//
// Clients (the `version` of an item; aliases in package.json):
//   7 → ai 7.x   5 → ai5 (newest 5.x)   6 → ai6 (newest 6.x)
//   "5-strict" → ai5-strict (5.0.216, the last 5.x whose chunk schemas reject unknown keys)
//   "6-strict" → ai6-strict (6.0.230, the same for 6.x)
//
// Usage:
//   node ai-sdk-check.mjs < items.json
// stdin: a JSON array of {name, version, body} (body: the SSE bytes as a UTF-8 string) or
//        {name, version, base64, piece?} (exact bytes; optionally served in `piece`-byte reads)
// stdout: a JSON array, one result per item, in order:
//   {name, version, client: "<ai version>", chunks: <number of chunks parsed, [DONE] excluded>,
//    types: [chunk types the transport delivered, in order], finish: <the last finish chunk or null>,
//    errors: [{source, message, index?, raw?}], message: <final UIMessage or null>,
//    request: {url, method, body}}
// `source` is one of:
//   "schema"      a chunk `uiMessageChunkSchema` (or JSON.parse) rejects; `index` counts chunks
//   "transport"   the transport's stream failed (its first invalid chunk, as `useChat` sees it)
//   "reader"      `readUIMessageStream` rejected the chunks (ordering errors and the like)
//   "error-chunk" an `error` chunk, reported through `onError` (a stream reporting a failed run)
//
// Exit status is 0 whenever the harness itself worked, even if the client failed (that is in the
// JSON). It is non-zero only when the harness fails (bad input, missing packages).

import { createRequire } from "node:module";

const PIECE = 7;
const API = "http://ai-sdk.invalid/api/chat";
const CLIENTS = { 5: "ai5", 6: "ai6", 7: "ai", "5-strict": "ai5-strict", "6-strict": "ai6-strict" };
const HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};
const require = createRequire(import.meta.url);
const loaded = new Map();

async function client(version) {
  const key = String(version);
  const pkg = CLIENTS[key];
  if (pkg === undefined) throw new Error(`unknown client version ${JSON.stringify(version)}: one of ${Object.keys(CLIENTS)}`);
  if (!loaded.has(key)) {
    const ai = await import(pkg);
    loaded.set(key, { ai, release: require(`${pkg}/package.json`).version });
  }
  return loaded.get(key);
}

function bodyStream(bytes, piece) {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + piece));
      offset += piece;
    },
  });
}

function errorMessage(error) {
  if (error instanceof Error) return error.message;
  return String(error);
}

async function runOne(item) {
  const { name, version } = item;
  const { bytes, piece } = parseItem(item);
  const { ai, release } = await client(version);
  const result = { name, version, client: release, chunks: 0, types: [], finish: null, errors: [], message: null, request: null };
  const fail = (source, error, extra = {}) => result.errors.push({ source, message: errorMessage(error), ...extra });

  // 1. Every chunk, parsed and validated as the client does, all errors recorded.
  const parsed = ai.parseJsonEventStream({ stream: bodyStream(bytes, piece), schema: ai.uiMessageChunkSchema });
  for await (const outcome of parsed) {
    if (!outcome.success) fail("schema", outcome.error, { index: result.chunks, raw: outcome.rawValue ?? null });
    result.chunks += 1;
  }

  // 2. The real transport: the chunk stream `useChat` would consume.
  const fetchImpl = async (url, init) => {
    result.request = { url: String(url), method: init?.method ?? "GET", body: init?.body ? JSON.parse(init.body) : null };
    return new Response(bodyStream(bytes, piece), { status: 200, headers: HEADERS });
  };
  const transport = new ai.DefaultChatTransport({ api: API, fetch: fetchImpl });
  const chunks = [];
  try {
    const stream = await transport.sendMessages({
      trigger: "submit-message",
      chatId: "chat-conformance",
      messageId: undefined,
      messages: [{ id: "user-1", role: "user", parts: [{ type: "text", text: "hello" }] }],
      abortSignal: undefined,
    });
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
  } catch (error) {
    fail("transport", error);
  }
  result.types = chunks.map((c) => c.type);
  result.finish = chunks.findLast((c) => c.type === "finish") ?? null;

  // 3. The same chunks through the SDK's message builder.
  const replay = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(structuredClone(chunk));
      controller.close();
    },
  });
  try {
    const messages = ai.readUIMessageStream({
      stream: replay,
      onError: (error) => {
        // `processUIMessageStream` reports an `error` chunk as `new Error(errorText)`; anything else
        // (a thrown UIMessageStreamError and the like) is the reader rejecting the stream.
        const isChunk =
          error instanceof Error &&
          error.constructor === Error &&
          chunks.some((c) => c.type === "error" && c.errorText === error.message);
        fail(isChunk ? "error-chunk" : "reader", error);
      },
    });
    for await (const snapshot of messages) result.message = snapshot;
  } catch (error) {
    fail("reader", error);
  }
  if (result.message !== null) result.message = JSON.parse(JSON.stringify(result.message));
  return result;
}

function parseItem(item) {
  if (item === null || typeof item !== "object" || typeof item.name !== "string") {
    throw new Error(`each item must be {name, version, body | base64}, got ${JSON.stringify(item)}`);
  }
  const piece = item.piece ?? PIECE;
  if (!Number.isSafeInteger(piece) || piece < 1) throw new Error(`bad piece size ${JSON.stringify(piece)}`);
  if (typeof item.body === "string") return { bytes: new TextEncoder().encode(item.body), piece };
  if (typeof item.base64 === "string") return { bytes: new Uint8Array(Buffer.from(item.base64, "base64")), piece };
  throw new Error(`item ${JSON.stringify(item.name)} has neither a string body nor base64`);
}

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

async function main() {
  const items = JSON.parse(await readStdin());
  if (!Array.isArray(items)) throw new Error("expected a JSON array on stdin");
  const results = [];
  for (const item of items) results.push(await runOne(item));
  process.stdout.write(JSON.stringify(results));
  process.stdout.write("\n");
}

main().catch((error) => {
  process.stderr.write(`ai-sdk-check harness failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
