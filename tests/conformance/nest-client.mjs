#!/usr/bin/env node
// Conformance harness: run nest SSE bodies through the REAL published nest client.
//
// Each body is served, unmodified, to @dudousxd/nestjs-agent-react's own `AgentChatTransport`
// exactly as a nest server answers `POST /agent/chat`: a mocked `fetch` returns a `Response` with
// status 201, `content-type: text/event-stream`, `x-agent-run-id` and `x-agent-thread-id`, whose
// body is a ReadableStream delivering the bytes in 7-byte pieces (so frames, and multi-byte UTF-8
// characters, are split across reads). The transport's `sendMessages` turns the body into AI SDK
// UI message chunks; those chunks are read fully, each one is checked against the AI SDK's own
// `uiMessageChunkSchema` (what `DefaultChatTransport` enforces on its wire), and the chunks are fed
// through the AI SDK's own `readUIMessageStream`, which builds the UIMessage the way `useChat`
// does, so ordering errors (`No tool invocation found for tool call ID "…"`) surface.
//
// Usage:
//   node nest-client.mjs < body.sse            one raw body in, one JSON result out
//   node nest-client.mjs --batch < bodies.json a JSON array in, a JSON array of results out;
//                                              each item is a string (UTF-8 text) or
//                                              {"base64": "...", "piece"?: n} (exact bytes,
//                                              optionally served in n-byte pieces instead of 7)
//
// Result: {"chunks": [...], "message": <final UIMessage or null>, "error": <string or null>,
//          "errors": [{"source", "message"}], "schemaErrors": [{"index", "chunk", "message"}],
//          "meta": {"onMeta", "runId", "threadId"}, "request": {"url", "method", "body"}}
// `error` is the first client-side error: an `error` chunk's text (a stream that reports a failed
// run), a reader error from `readUIMessageStream`, or a transport failure. `errors` lists them all,
// with `source` one of "error-chunk", "reader", "transport".
//
// Exit status is 0 whenever the harness itself worked, even if the client failed (that is in the
// JSON). It is non-zero only when the harness fails (bad input, missing packages).

import { AgentChatTransport } from "@dudousxd/nestjs-agent-react";
import { asSchema, readUIMessageStream, uiMessageChunkSchema } from "ai";

const PIECE = 7;
const RUN_ID = "run-conformance";
const THREAD_ID = "thr-conformance";
const chunkSchema = asSchema(uiMessageChunkSchema);

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

async function runOne(bytes, piece = PIECE) {
  const result = {
    chunks: [],
    message: null,
    error: null,
    errors: [],
    schemaErrors: [],
    meta: { onMeta: null, runId: null, threadId: null },
    request: null,
  };
  const fail = (source, error) => {
    const message = errorMessage(error);
    result.errors.push({ source, message });
    if (result.error === null) result.error = message;
  };

  const fetchImpl = async (url, init) => {
    result.request = { url: String(url), method: init?.method ?? "GET", body: init?.body ?? null };
    return new Response(bodyStream(bytes, piece), {
      status: 201,
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-agent-run-id": RUN_ID,
        "x-agent-thread-id": THREAD_ID,
      },
    });
  };
  const transport = new AgentChatTransport({
    baseUrl: "http://nest.invalid",
    fetch: fetchImpl,
    onMeta: (meta) => {
      result.meta.onMeta = meta;
    },
  });

  let stream;
  try {
    stream = await transport.sendMessages({
      trigger: "submit-message",
      chatId: "chat-conformance",
      messageId: undefined,
      messages: [{ id: "user-1", role: "user", parts: [{ type: "text", text: "hello" }] }],
      abortSignal: undefined,
    });
  } catch (error) {
    fail("transport", error);
    return result;
  }

  // 1. The transport's chunk stream, read to its end.
  try {
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      result.chunks.push(value);
    }
  } catch (error) {
    fail("transport", error);
  }
  result.meta.runId = transport.runId ?? null;
  result.meta.threadId = transport.threadId ?? null;

  // 2. Every chunk must be a valid UIMessageChunk by the AI SDK's own schema.
  for (const [index, chunk] of result.chunks.entries()) {
    const checked = await chunkSchema.validate(chunk);
    if (!checked.success) {
      result.schemaErrors.push({ index, chunk, message: errorMessage(checked.error) });
    }
  }

  // 3. The same chunks through the AI SDK's message builder.
  const replay = new ReadableStream({
    start(controller) {
      for (const chunk of result.chunks) controller.enqueue(structuredClone(chunk));
      controller.close();
    },
  });
  try {
    const messages = readUIMessageStream({
      stream: replay,
      onError: (error) => {
        // `processUIMessageStream` reports an `error` chunk as `new Error(errorText)`; anything
        // else (a thrown UIMessageStreamError and the like) is the reader rejecting the stream.
        const isChunk =
          error instanceof Error &&
          error.constructor === Error &&
          result.chunks.some((c) => c.type === "error" && c.errorText === error.message);
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

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return Buffer.concat(parts);
}

function parseItem(item) {
  if (typeof item === "string") return { bytes: new TextEncoder().encode(item), piece: PIECE };
  if (item !== null && typeof item === "object" && typeof item.base64 === "string") {
    const piece = item.piece ?? PIECE;
    if (!Number.isSafeInteger(piece) || piece < 1) throw new Error(`bad piece size ${JSON.stringify(piece)}`);
    return { bytes: new Uint8Array(Buffer.from(item.base64, "base64")), piece };
  }
  throw new Error(`batch item must be a string or {"base64": string, "piece"?: int}, got ${JSON.stringify(item)}`);
}

async function main() {
  const input = await readStdin();
  if (process.argv.includes("--batch")) {
    const items = JSON.parse(input.toString("utf8"));
    if (!Array.isArray(items)) throw new Error("--batch expects a JSON array on stdin");
    const results = [];
    for (const item of items) {
      const { bytes, piece } = parseItem(item);
      results.push(await runOne(bytes, piece));
    }
    process.stdout.write(JSON.stringify(results));
  } else {
    process.stdout.write(JSON.stringify(await runOne(new Uint8Array(input))));
  }
  process.stdout.write("\n");
}

main().catch((error) => {
  process.stderr.write(`nest-client harness failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
