// The published nest server (@dudousxd/nestjs-agent 0.11 with its core 0.12): the package's own
// AgentModule and ChatController in a NestJS app, the inline runner and its in-process sink, the
// shipped header actor resolver, a scripted model that answers every turn "Hello." and an
// in-memory store that makes threads `thr-<n>` (what the captures in tests/data/captures used).
// Prints `listening <port>` once it serves on 127.0.0.1; runs until killed.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AgentModule, HeaderActorResolver, encodeStreamEvent } from '@dudousxd/nestjs-agent';

const model = {
  async runTurn({ sink }) {
    await sink.write(encodeStreamEvent({ kind: 'text', text: 'Hello.' }));
    return { text: 'Hello.', toolCalls: [], usage: { inputTokens: 3, outputTokens: 2 } };
  },
};

class MemoryStore {
  threads = new Map();
  messages = 0;

  async createThread({ actor, transient, title }) {
    const now = new Date().toISOString();
    const id = `thr-${this.threads.size + 1}`;
    const thread = { id, title: title ?? '', transient: transient === true, createdAt: now, updatedAt: now, owner: actor.id, messages: [] };
    this.threads.set(id, thread);
    return summary(thread);
  }
  async getThread(threadId) {
    const thread = this.threads.get(threadId);
    return thread === undefined ? null : { ...summary(thread), messages: [...thread.messages] };
  }
  async listThreads(actorRef) {
    return [...this.threads.values()].filter((t) => t.owner === actorRef).map(summary);
  }
  async appendMessage(input) {
    const message = { id: `msg-${++this.messages}`, createdAt: new Date().toISOString(), ...input };
    this.threads.get(input.threadId).messages.push(message); // an unknown thread: a TypeError
    return message;
  }
  async ownerOfThread(threadId) {
    return this.threads.get(threadId)?.owner ?? null;
  }
  async setActiveStream() {}
  async softDeleteThread() {}
  async forkThread() { throw new Error('not supported'); }
  async setTitle() {}
  async promoteThread() {}
  async ownerOfToolCall() { return null; }
  async runForToolCall() { return null; }
  async ownerOfActiveStream() { return null; }
  async truncateFrom() {}
  async recordToolCall() {}
  async updateToolCall() {}
  async recordUsage() {}
  async quotaToday() { return { usedTokens: 0, costUsd: 0 }; }
}

function summary(thread) {
  const { messages, owner, ...rest } = thread;
  return rest;
}

class AppModule {}
Module({
  imports: [AgentModule.forRoot({ model, store: new MemoryStore(), actorResolver: new HeaderActorResolver() })],
})(AppModule);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
console.log(`listening ${app.getHttpServer().address().port}`);
