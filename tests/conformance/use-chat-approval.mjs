#!/usr/bin/env node
// A real tool-approval round of `useChat`, without a browser: @ai-sdk/react's `Chat` with ai 7's
// `DefaultChatTransport({api})` and `sendAutomaticallyWhen:
// lastAssistantMessageIsCompleteWithApprovalResponses`, against a live server.
//
// Usage: node use-chat-approval.mjs <api-url> [--text "hello"] [--deny "reason"]
//
// sendMessage({text}) and wait; then answer every tool part in `approval-requested` with
// `chat.addToolApprovalResponse({id, approved, reason})` (approved unless --deny), which makes
// the chat send itself again; wait until it is ready.
// stdout: {requests: [{url, body}], asked: [tool parts as first asked], status, error, messages}
// Exit status is 0 whenever the round ran (a client error is in the JSON).

import { Chat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
}

const api = process.argv[2];
if (!api || api.startsWith("--")) {
  process.stderr.write("usage: node use-chat-approval.mjs <api-url> [--text T] [--deny REASON]\n");
  process.exit(2);
}
const text = option("--text", "hello");
const deny = option("--deny", null);

function errorMessage(error) {
  if (error == null) return null;
  return error instanceof Error ? error.message : String(error);
}

async function main() {
  const record = { requests: [], asked: [], status: null, error: null, messages: [] };
  const fetchImpl = async (url, init) => {
    record.requests.push({ url: String(url), body: init?.body ? JSON.parse(init.body) : null });
    return fetch(url, init);
  };
  // the automatic send is not awaited by addToolApprovalResponse: its end is the chat's second finish
  let finishes = 0;
  let secondFinished;
  const second = new Promise((resolve) => {
    secondFinished = resolve;
  });
  const chat = new Chat({
    transport: new DefaultChatTransport({ api, fetch: fetchImpl }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (error) => {
      record.error ??= errorMessage(error);
    },
    onFinish: () => {
      finishes += 1;
      if (finishes === 2) secondFinished();
    },
  });
  try {
    await chat.sendMessage({ text });
    const last = chat.messages[chat.messages.length - 1];
    const asking = (last?.parts ?? []).filter((part) => part.state === "approval-requested");
    record.asked = JSON.parse(JSON.stringify(asking));
    for (const part of asking) {
      await chat.addToolApprovalResponse({
        id: part.approval.id,
        approved: deny === null,
        ...(deny === null ? {} : { reason: deny }),
      });
    }
    if (asking.length > 0) await second;
  } catch (error) {
    record.error ??= errorMessage(error);
  }
  record.status = chat.status;
  record.error ??= errorMessage(chat.error);
  record.messages = JSON.parse(JSON.stringify(chat.messages));
  process.stdout.write(JSON.stringify(record));
  process.stdout.write("\n");
}

main().catch((error) => {
  process.stderr.write(`use-chat-approval failed: ${error?.stack ?? error}\n`);
  process.exit(2);
});
