import { DatabaseSync } from 'node:sqlite';
import { openStorage, migrate } from './src/storage/database.ts';
import { features } from './src/features/index.ts';
const s = openStorage('sqlite:/tmp/qp.db'); await migrate(s.db, features); await s.close();
const db = new DatabaseSync('/tmp/qp.db');
for (const q of [
 `select * from api_keys inner join workspaces on workspaces.id = api_keys.workspace_id where (api_keys.secret_hash = 'x' or api_keys.previous_secret_hash = 'x')`,
]) console.log(db.prepare('explain query plan ' + q).all());
console.log(db.prepare(`select sql from sqlite_master where tbl_name='api_keys' and type='index'`).all());
