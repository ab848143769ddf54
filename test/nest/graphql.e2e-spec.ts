import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, ID, Mutation, Query, Resolver } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { GraphQLError } from 'graphql';
import request from 'supertest';
import { LockService, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';

@Resolver()
class OrdersResolver {
  @Query(() => String)
  ping() {
    return 'pong';
  }

  // Keys from the field's arguments (after pipes) ...
  @Mutation(() => String)
  @Locked('order:{data.id}', 5000)
  async pay(@Args('id', { type: () => ID }) id: string) {
    return `paid ${id}`;
  }

  // ... and from the GraphQL context (here the request's header).
  @Mutation(() => String)
  @Locked(({ context }) => `tenant:${context.req.headers['x-tenant']}`, 5000)
  async sync() {
    return 'synced';
  }

  @Mutation(() => String)
  @Locked('refund:{data.id}', 5000, {
    busy: { exception: ({ resources }) => new GraphQLError('Try again later', { extensions: { code: 'TRY_LATER', resources } }) },
  })
  async refund(@Args('id', { type: () => ID }) id: string) {
    return `refunded ${id}`;
  }
}

let fleet: RedisFleet;
let app: INestApplication;
let locks: LockService;

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes: fleet.urls }),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    ],
    providers: [OrdersResolver],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  locks = app.get(LockService);
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

const gql = (query: string, headers: Record<string, string> = {}) =>
  request(app.getHttpServer()).post('/graphql').set(headers).send({ query });

describe('@Locked on GraphQL resolvers (Apollo)', () => {
  it('answers a busy resource with a GraphQL error whose extensions.code is RESOURCE_BUSY, keyed from the arguments', async () => {
    const held = await locks.acquire('order:42', 5000);
    const busy = await gql('mutation { pay(id: "42") }');
    expect(busy.status).toBe(200);
    expect(busy.body.data).toBeNull();
    expect(busy.body.errors).toHaveLength(1);
    expect(busy.body.errors[0]).toMatchObject({
      message: 'The resource is locked by another request',
      path: ['pay'],
      extensions: { code: 'RESOURCE_BUSY' },
    });
    expect((await gql('mutation { pay(id: "43") }')).body).toEqual({ data: { pay: 'paid 43' } });
    await held.release();
    expect((await gql('mutation { pay(id: "42") }')).body).toEqual({ data: { pay: 'paid 42' } });
  });

  it('keys from the GraphQL context', async () => {
    const held = await locks.acquire('tenant:acme', 5000);
    expect((await gql('mutation { sync }', { 'x-tenant': 'acme' })).body.errors[0].extensions.code).toBe('RESOURCE_BUSY');
    expect((await gql('mutation { sync }', { 'x-tenant': 'globex' })).body).toEqual({ data: { sync: 'synced' } });
    await held.release();
  });

  it('answers with the error of busy.exception when one is given', async () => {
    const held = await locks.acquire('refund:7', 5000);
    const busy = await gql('mutation { refund(id: "7") }');
    expect(busy.body.errors[0]).toMatchObject({ message: 'Try again later', extensions: { code: 'TRY_LATER', resources: ['refund:7'] } });
    await held.release();
  });
});
