import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { generateKey, listKeys, revokeKey, rotateKey } from '../../service/apikeys.ts';
import type { Deps } from '../../service/deps.ts';
import { addConnection, createUser, currentUser, getUser, listUsers } from '../../service/users.ts';
import { callerOf } from '../auth.ts';
import { answers } from '../openapi-responses.ts';
import { ConnectionAnswer, CurrentUser, KeyAnswer, KeyList, NewKey, UserAnswer, UserList, AccountIdParams, ConnectionBody, KeyGenerateBody, KeyIdBody, KeyListQuery, UserCreateBody } from '../schemas/index.ts';

export const accountRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/user/', {
    schema: { tags: ['accounts'], summary: 'Create a user (administrators)', body: UserCreateBody, response: answers({ 200: UserAnswer }, ['insufficient_storage']) },
    config: { permission: 'Admin' },
    handler: (req) => createUser(deps, req.body),
  });
  app.get('/v1/user/', {
    schema: { tags: ['accounts'], summary: "The caller's user, plan limits and usage", response: answers({ 200: CurrentUser }, ['user_not_found']) },
    config: { permission: 'Read' },
    handler: (req) => currentUser(deps, callerOf(req)),
  });
  app.get('/v1/users/', { schema: { tags: ['accounts'], summary: 'Every user (administrators)', response: answers({ 200: UserList }) }, config: { permission: 'Admin' }, handler: () => listUsers(deps) });
  app.get('/v1/user/:account_id', {
    schema: { tags: ['accounts'], summary: 'Any user (administrators)', params: AccountIdParams, response: answers({ 200: UserAnswer }, ['user_not_found']) },
    config: { permission: 'Admin' },
    handler: (req) => getUser(deps, req.params.account_id),
  });

  app.post('/v1/keys/generate', {
    schema: { tags: ['keys'], summary: 'Make a key (the secret is answered once)', body: KeyGenerateBody, response: answers({ 200: NewKey }, ['user_not_found', 'insufficient_storage']) },
    config: { permission: 'Read' },
    handler: (req) => generateKey(deps, callerOf(req), req.body),
  });
  app.get('/v1/keys/retrieve', {
    schema: { tags: ['keys'], summary: "The caller's keys, without secrets", querystring: KeyListQuery, response: answers({ 200: KeyList }, ['user_not_found']) },
    config: { permission: 'Read' },
    handler: (req) => listKeys(deps, callerOf(req), req.query.user_id),
  });
  app.post('/v1/keys/revoke', {
    schema: { tags: ['keys'], summary: 'Revoke a key', body: KeyIdBody, response: answers({ 200: KeyAnswer }, ['key_not_found', 'insufficient_storage']) },
    config: { permission: 'Read' },
    handler: (req) => revokeKey(deps, callerOf(req), req.body.key_id),
  });
  app.post('/v1/keys/rotate', {
    schema: { tags: ['keys'], summary: 'A new secret with the same grant; the old one works until revoked', body: KeyIdBody, response: answers({ 200: NewKey }, ['key_not_found', 'insufficient_storage']) },
    config: { permission: 'Read' },
    handler: (req) => rotateKey(deps, callerOf(req), req.body.key_id),
  });

  app.post('/v1/connection/', {
    schema: { tags: ['accounts'], summary: "Record a connection on the caller's user (idempotent)", body: ConnectionBody, response: answers({ 200: ConnectionAnswer }, ['user_not_found', 'insufficient_storage']) },
    config: { permission: 'Write' },
    handler: (req) => addConnection(deps, callerOf(req), req.body),
  });
};
