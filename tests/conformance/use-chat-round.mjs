#!/usr/bin/env node
// A real `useChat` round, without a browser: @ai-sdk/react's `Chat` (the object `useChat` drives,
// over ai 7's AbstractChat) with a `DefaultChatTransport({api})`, against a live server.
//
// Usage:
//   node use-chat-round.mjs <api-url> [--text "hello"] [--stop-after-events N] [--body '{"k":"v"}']
//
// Two rounds, each with a fresh Chat:
//   full     sendMessage({text}) and wait for it: the chat's final messages, status, error
//   stopped  the same, but `chat.stop()` is called as soon as N SSE events (default 2) of the
//            response have arrived (counted on the bytes the transport reads), then the chat
//            settles: what the user is left with after pressing Stop mid-stream
// stdout: {"api", "full": Round, "stopped": Round} with
//   Round = {status, error, messages, finish: {isAbort, isDisconnect, isError} | null,
//            data: [data parts seen by onData, transient ones included], request: {url, body},
//            response: {status, headers}, eventsSeen, stopCalled}
// Exit status is 0 whenever the rounds ran (a client error is in the JSON), non-zero only when
// the script itself fails.

import { Chat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
}

const api = process.argv[2];
if (!api || api.startsWith("--")) {
  process.stderr.write("usage: node use-chat-round.mjs <api-url> [--text T] [--stop-after-events N] [--body JSON]\n");
  process.exit(2);
}
const text = option("--text", "hello");
const stopAfter = Number(option("--stop-after-events", "2"));
const extraBody = JSON.parse(option("--body", "{}"));

function errorMessage(error) {
  if (error == null) return null;
  return error instanceof Error ? error.message : String(error);
}

async function round({ stopAfterEvents }) {
  const record = {
    status: null,
    error: null,
    messages: [],
    finish: null,
    data: [],
    request: null,
    response: null,
    eventsSeen: 0,
    stopCalled: false,
  };
  let chat;
  let stopping = null;
  const fetchImpl = async (url, init) => {
    record.request = { url: String(url), body: init?.body ? JSON.parse(init.body) : null };
    const response = await fetch(url, init);
    record.response = { status: response.status, headers: Object.fromEntries(response.headers) };
    if (stopAfterEvents == null || response.body == null) return response;
    // Count SSE events as the transport reads them; press Stop after the N-th.
    const decoder = new TextDecoder();
    let pending = "";
    const counting = response.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          controller.enqueue(chunk);
          pending += decoder.decode(chunk, { stream: true });
          const events = pending.split(/\r\n\r\n|\n\n|\r\r/);
          pending = events.pop();
          record.eventsSeen += events.length;
          if (stopping === null && record.eventsSeen >= stopAfterEvents) {
            record.stopCalled = true;
            stopping = chat.stop();
          }
        },
      }),
    );
    return new Response(counting, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  chat = new Chat({
    transport: new DefaultChatTransport({ api, fetch: fetchImpl, body: extraBody }),
    onError: (error) => {
      record.error ??= errorMessage(error);
    },
    onData: (part) => {
      record.data.push(part);
    },
    onFinish: ({ isAbort, isDisconnect, isError }) => {
      record.finish = { isAbort: Boolean(isAbort), isDisconnect: Boolean(isDisconnect), isError: Boolean(isError) };
    },
  });
  try {
    await chat.sendMessage({ text });
  } catch (error) {
    record.error ??= errorMessage(error);
  }
  if (stopping !== null) await stopping;
  record.status = chat.status;
  record.error ??= errorMessage(chat.error);
  record.messages = JSON.parse(JSON.stringify(chat.messages));
  return record;
}

async function main() {
  const full = await round({ stopAfterEvents: null });
  const stopped = await round({ stopAfterEvents: stopAfter });
  process.stdout.write(JSON.stringify({ api, full, stopped }));
  process.stdout.write("\n");
}

main().catch((error) => {
  process.stderr.write(`use-chat-round failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
