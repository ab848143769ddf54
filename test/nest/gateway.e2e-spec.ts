import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { LockService, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

@WebSocketGateway()
class SeatsGateway {
  @SubscribeMessage('reserve')
  @Locked('seat:{data.seat}', 5000)
  async reserve(@MessageBody() body: { seat: string }) {
    return { event: 'reserved', data: body.seat };
  }
}

let fleet: RedisFleet;
let app: INestApplication;
let locks: LockService;
let socket: WebSocket;
const messages: { event: string; data: unknown }[] = [];

/** The next message the gateway sends this client. */
async function answer(event: string, data: unknown): Promise<{ event: string; data: any }> {
  const seen = messages.length;
  socket.send(JSON.stringify({ event, data }));
  while (messages.length === seen) await new Promise((resolve) => socket.once('message', resolve));
  return messages[seen]!;
}

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    providers: [SeatsGateway],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  app.useWebSocketAdapter(new WsAdapter(app));
  await app.listen(0, '127.0.0.1');
  locks = app.get(LockService);
  const { port } = app.getHttpServer().address() as AddressInfo;
  socket = new WebSocket(`ws://127.0.0.1:${port}`);
  socket.on('message', (raw) => messages.push(JSON.parse(String(raw))));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
});

afterAll(async () => {
  socket?.close();
  await app?.close();
  await fleet?.stop();
});

describe('@Locked on a WebSocket gateway', () => {
  it("answers a busy resource through the gateway's error path: an exception event with code RESOURCE_BUSY", async () => {
    expect(await answer('reserve', { seat: '12A' })).toEqual({ event: 'reserved', data: '12A' });
    const held = await locks.acquire('seat:12A', 5000);
    expect(await answer('reserve', { seat: '12A' })).toEqual({
      event: 'exception',
      data: { status: 'error', code: 'RESOURCE_BUSY', message: 'The resource is locked by another request' },
    });
    await held.release();
    expect(await answer('reserve', { seat: '12A' })).toEqual({ event: 'reserved', data: '12A' });
  });
});
