#!/usr/bin/env node
// A real `useChat` reconnect, without a browser: the page was reloaded while its answer was still
// streaming. A fresh @ai-sdk/react `Chat` with the chat's id and its user message (what the page
// restored from its storage) calls `resumeStream()`: ai 7's `DefaultChatTransport` asks
// `GET <api>/<chatId>/stream`, and the chat settles with the answer.
//
// Usage:
//   node use-chat-resume.mjs <api-url> <chat-id> <user-message-json>
// stdout: {status, error, messages, finish: {isAbort, isDisconnect, isError} | null,
//          resume: {url, status}}
// Exit status is 0 whenever the round ran (a client error is in the JSON).

import { Chat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";

const [api, id, user] = process.argv.slice(2);
if (!api || !id || !user) {
  process.stderr.write("usage: node use-chat-resume.mjs <api-url> <chat-id> <user-message-json>\n");
  process.exit(2);
}

function errorMessage(error) {
  if (error == null) return null;
  return error instanceof Error ? error.message : String(error);
}

async function main() {
  const record = { status: null, error: null, messages: null, finish: null, resume: null };
  const fetchImpl = async (url, init) => {
    const response = await fetch(url, init);
    record.resume = { url: String(url), status: response.status };
    return response;
  };
  const chat = new Chat({
    id,
    messages: [JSON.parse(user)],
    transport: new DefaultChatTransport({ api, fetch: fetchImpl }),
    onError: (error) => {
      record.error ??= errorMessage(error);
    },
    onFinish: ({ isAbort, isDisconnect, isError }) => {
      record.finish = { isAbort: Boolean(isAbort), isDisconnect: Boolean(isDisconnect), isError: Boolean(isError) };
    },
  });
  try {
    await chat.resumeStream();
  } catch (error) {
    record.error ??= errorMessage(error);
  }
  record.status = chat.status;
  record.error ??= errorMessage(chat.error);
  record.messages = JSON.parse(JSON.stringify(chat.messages));
  process.stdout.write(JSON.stringify(record) + "\n");
}

main().catch((error) => {
  process.stderr.write(`use-chat-resume failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
