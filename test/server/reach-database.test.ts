// The check `npm start` makes of DATABASE_URL while the server's modules load (src/storage/reach.ts): a definite
// refusal stops the start; a database that is slow or silent is left to the pool's own timeout.
import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import { reachDatabase } from '../../src/storage/reach.ts';
import { freePort } from '../support/prism.ts';
import { postgresUrl } from '../support/server.ts';

describe('reachDatabase', () => {
  test('nothing listening: refused', async () => {
    const port = await freePort();
    await expect(reachDatabase(`postgres://postgres@127.0.0.1:${port}/test`)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });

  test('a server that takes the connection and closes it without an answer is no refusal: the pool decides', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => {
      sockets.push(socket);
      // Ends the connection after the client has waited: what a database that stopped answering looks like.
      setTimeout(() => socket.destroy(), 200);
    }).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const { port } = silent.address() as AddressInfo;
      await expect(reachDatabase(`postgres://postgres@127.0.0.1:${port}/test`)).resolves.toBeUndefined();
      expect(sockets.length).toBe(1);
    } finally {
      silent.close();
    }
  });

  test('SQLite has nothing to reach', async () => {
    await expect(reachDatabase('sqlite:/nonexistent/dir/x.db')).resolves.toBeUndefined();
  });

  test.runIf(postgresUrl)(
    'PostgreSQL: a database that takes the login is reached; a missing database is refused',
    async () => {
      await expect(reachDatabase(postgresUrl!)).resolves.toBeUndefined();
      const missing = new URL(postgresUrl!);
      missing.pathname = '/no_such_database_of_the_tests';
      await expect(reachDatabase(missing.toString())).rejects.toMatchObject({ code: '3D000' });
    },
  );
});
