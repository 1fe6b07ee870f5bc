#!/usr/bin/env node
// A real `useChat` round, without a browser: @ai-sdk/react's `Chat` (the object `useChat` drives,
// over ai 7's AbstractChat) with a `DefaultChatTransport({api})`, against a live server.
//
// Usage:
//   node use-chat-round.mjs <api-url> [--text "hello"] [--stop-after-events N] [--body '{"k":"v"}']
//
// Two rounds, each with a fresh Chat:
//   full     sendMessage({text}) and wait for it: the chat's final messages, status, error; then
//            `chat.resumeStream()` on the finished chat (what a page reload does): the transport
//            asks `GET <api>/<chatId>/stream`, which must answer 204 and leave the chat as it was
//   stopped  the same, but `chat.stop()` is called as soon as N SSE events (default 2) of the
//            response have arrived (counted on the bytes the transport reads), then the chat
//            settles: what the user is left with after pressing Stop mid-stream
// stdout: {"api", "full": Round, "stopped": Round} with
//   Round = {status, error, messages, finish: {isAbort, isDisconnect, isError} | null,
//            data: [data parts seen by onData, transient ones included], request: {url, body},
//            response: {status, headers}, eventsSeen, commentsSeen (SSE comment lines, such as
//            heartbeats), stopCalled, resume (full only): {url, status, chatStatus, error,
//            messagesUnchanged}}
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
    commentsSeen: 0,
    stopCalled: false,
    resume: null,
  };
  let chat;
  let stopping = null;
  const fetchImpl = async (url, init) => {
    if ((init?.method ?? "GET") === "GET") {
      // the transport's reconnect (resumeStream): recorded apart from the chat's own request
      const response = await fetch(url, init);
      record.resume = { url: String(url), status: response.status };
      return response;
    }
    record.request = { url: String(url), body: init?.body ? JSON.parse(init.body) : null };
    const response = await fetch(url, init);
    record.response = { status: response.status, headers: Object.fromEntries(response.headers) };
    if (response.body == null) return response;
    // Count SSE events and comment lines as the transport reads them; press Stop after the N-th event.
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
          for (const event of events) {
            record.commentsSeen += event.split(/\r\n|\n|\r/).filter((line) => line.startsWith(":")).length;
          }
          if (stopAfterEvents != null && stopping === null && record.eventsSeen >= stopAfterEvents) {
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
  if (stopAfterEvents == null) {
    let resumeError = null;
    try {
      await chat.resumeStream();
    } catch (error) {
      resumeError = errorMessage(error);
    }
    record.resume = {
      ...record.resume,
      chatStatus: chat.status,
      error: resumeError ?? errorMessage(chat.error),
      messagesUnchanged: JSON.stringify(chat.messages) === JSON.stringify(record.messages),
    };
  }
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
