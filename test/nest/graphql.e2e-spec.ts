import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, ID, Mutation, Query, Resolver } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { GraphQLError } from 'graphql';
import request from 'supertest';
import { LockService, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

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

async function mercurius(nodes: string[], options: Partial<MercuriusDriverConfig>): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({ nodes, nodeTimeout: TEST_NODE_TIMEOUT }),
      GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true, ...options }),
    ],
    providers: [OrdersResolver],
  }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

/** The two drivers `@nestjs/graphql` ships for: Apollo on Express, Mercurius on Fastify (it runs on nothing else). */
const DRIVERS = {
  Apollo: async (nodes: string[]) => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ nodes, nodeTimeout: TEST_NODE_TIMEOUT }),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
      ],
      providers: [OrdersResolver],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  },
  Mercurius: (nodes: string[]) => mercurius(nodes, {}),
  // graphql-jit builds the errors of a compiled query itself: `jit: 1` compiles a query on its second run.
  'Mercurius, queries compiled by graphql-jit': (nodes: string[]) => mercurius(nodes, { jit: 1 }),
} satisfies Record<string, (nodes: string[]) => Promise<INestApplication>>;

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

describe.each(Object.keys(DRIVERS) as (keyof typeof DRIVERS)[])('@Locked on GraphQL resolvers (%s)', (driver) => {
  let app: INestApplication;
  let locks: LockService;

  beforeAll(async () => {
    app = await DRIVERS[driver](fleet.urls);
    locks = app.get(LockService);
  });

  afterAll(async () => {
    await app?.close();
  });

  const gql = (query: string, headers: Record<string, string> = {}) =>
    request(app.getHttpServer()).post('/graphql').set(headers).send({ query });

  it('answers a busy resource with a GraphQL error whose extensions.code is RESOURCE_BUSY, keyed from the arguments', async () => {
    const held = await locks.acquire('order:42', 5000);
    // Twice: the second run of a query is the compiled one under Mercurius's jit.
    for (const busy of [await gql('mutation { pay(id: "42") }'), await gql('mutation { pay(id: "42") }')]) {
      // A GraphQL error in a 200, not an HTTP status: no 409 hidden in the answer either.
      expect(busy.status).toBe(200);
      expect(busy.body).toEqual({
        data: null,
        errors: [
          {
            message: 'The resource is locked by another request',
            locations: [{ line: 1, column: 12 }],
            path: ['pay'],
            extensions: { code: 'RESOURCE_BUSY' },
          },
        ],
      });
    }
    expect((await gql('mutation { pay(id: "43") }')).body).toEqual({ data: { pay: 'paid 43' } });
    await held.release();
    expect((await gql('mutation { pay(id: "42") }')).body).toEqual({ data: { pay: 'paid 42' } });
  });

  it('keys from the GraphQL context', async () => {
    const held = await locks.acquire('tenant:acme', 5000);
    const busy = await gql('mutation { sync }', { 'x-tenant': 'acme' });
    expect(busy.status).toBe(200);
    expect(busy.body.errors[0].extensions).toEqual({ code: 'RESOURCE_BUSY' });
    expect((await gql('mutation { sync }', { 'x-tenant': 'globex' })).body).toEqual({ data: { sync: 'synced' } });
    await held.release();
  });

  it('answers with the error of busy.exception when one is given', async () => {
    const held = await locks.acquire('refund:7', 5000);
    const busy = await gql('mutation { refund(id: "7") }');
    expect(busy.status).toBe(200);
    expect(busy.body.errors[0]).toMatchObject({ message: 'Try again later', extensions: { code: 'TRY_LATER', resources: ['refund:7'] } });
    await held.release();
  });
});
