-- Visibility decided at the disks must match PostgreSQL's: committed,
-- aborted, deleted and updated rows, the scanning transaction's own writes,
-- subtransactions, a bulk-loaded never-vacuumed table, and after VACUUM.
SET active_pg.stripe_pages = 2;

CREATE TABLE mv (id int, val text);
INSERT INTO mv SELECT g, 'v' || g FROM generate_series(1, 20000) g;	-- never vacuumed
SELECT ap_check('SELECT * FROM mv');
SELECT ap_check('SELECT * FROM mv WHERE id % 100 = 0');

-- aborted insert
BEGIN;
INSERT INTO mv SELECT g, 'aborted' FROM generate_series(20001, 21000) g;
ROLLBACK;
SELECT ap_check('SELECT * FROM mv WHERE id > 19000');

-- deletes and updates, committed and aborted
DELETE FROM mv WHERE id % 10 = 0;
UPDATE mv SET val = 'updated' WHERE id % 10 = 1;
BEGIN;
DELETE FROM mv WHERE id % 10 = 2;
UPDATE mv SET val = 'rolled back' WHERE id % 10 = 3;
ROLLBACK;
SELECT ap_check('SELECT * FROM mv');
SELECT count(*), count(*) FILTER (WHERE val = 'updated') FROM mv;

-- row locks leave xmax set but the row visible
BEGIN;
SELECT count(*) FROM (SELECT * FROM mv WHERE id % 10 = 4 FOR UPDATE) s;
SELECT ap_check('SELECT * FROM mv WHERE id % 10 = 4');
COMMIT;
BEGIN;
SELECT count(*) FROM (SELECT * FROM mv WHERE id % 10 = 5 FOR SHARE) s;
COMMIT;
SELECT ap_check('SELECT * FROM mv WHERE id % 10 = 5');

-- the scanning transaction's own writes (inserted, deleted, updated) and
-- those of its subtransactions, committed and rolled back
BEGIN;
INSERT INTO mv SELECT g, 'mine' FROM generate_series(30001, 30500) g;
DELETE FROM mv WHERE id % 10 = 6;
UPDATE mv SET val = 'mine too' WHERE id % 10 = 7;
SAVEPOINT s1;
INSERT INTO mv VALUES (40000, 'sub committed');
RELEASE s1;
SAVEPOINT s2;
INSERT INTO mv VALUES (40001, 'sub aborted');
DELETE FROM mv WHERE id % 10 = 8;
ROLLBACK TO s2;
SELECT ap_check('SELECT * FROM mv');
SELECT count(*) FILTER (WHERE val = 'mine') AS mine, count(*) FILTER (WHERE val = 'mine too') AS mine_too,
	count(*) FILTER (WHERE id >= 40000) AS sub
FROM mv;
COMMIT;
SELECT ap_check('SELECT * FROM mv');

-- repeatable read: rows written by this transaction after its snapshot was taken
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM mv;
INSERT INTO mv VALUES (50000, 'after snapshot');
SELECT ap_check('SELECT * FROM mv WHERE id >= 40000');
COMMIT;

-- a cursor sees the snapshot of its declaration
BEGIN;
SET LOCAL active_pg.force_pushdown = on;
DECLARE c CURSOR FOR SELECT count(*) FROM mv WHERE val LIKE 'v%';
INSERT INTO mv VALUES (60000, 'v late');
FETCH c;
SET LOCAL active_pg.enable = off;
SELECT count(*) - 1 FROM mv WHERE val LIKE 'v%';
COMMIT;

-- after VACUUM: frozen/all-visible pages decided without asking the host
VACUUM (FREEZE) mv;
SELECT ap_check('SELECT * FROM mv');
UPDATE mv SET val = 'after vacuum' WHERE id % 100 = 9;
SELECT ap_check('SELECT * FROM mv WHERE val <> ''x''');

-- dropped and added columns (tuples shorter than the descriptor go to the host)
ALTER TABLE mv ADD COLUMN extra int DEFAULT 42;
ALTER TABLE mv DROP COLUMN val;
INSERT INTO mv VALUES (70000, 7);
SELECT ap_check('SELECT * FROM mv WHERE extra = 42');
SELECT ap_check('SELECT id FROM mv WHERE extra IS NULL OR extra = 7');

-- empty table and a table truncated in the same transaction
CREATE TABLE empty_t (a int);
SELECT ap_check('SELECT * FROM empty_t');
BEGIN;
TRUNCATE mv;
INSERT INTO mv VALUES (1, 1);
SELECT ap_check('SELECT * FROM mv');
ROLLBACK;
SELECT ap_check('SELECT count(*) FROM mv');

-- Rows still in dirty shared buffers reach the disks before they scan.  A
-- table under shared_buffers / 64 has its blocks looked up in the buffer
-- table one by one, a larger one has every buffer's tag checked
-- (FlushRelationBuffers); the suite's 128 MB put these two on either side.
CREATE TABLE fl_small (id int, pad text);
CREATE TABLE fl_big (id int, pad text);
INSERT INTO fl_small SELECT g, repeat('s', 100) FROM generate_series(1, 3000) g;
INSERT INTO fl_big SELECT g, repeat('b', 100) FROM generate_series(1, 100000) g;
SELECT pg_relation_size('fl_small') / 8192 * 64 < setting::bigint AS small_looked_up,
	pg_relation_size('fl_big') / 8192 * 64 >= setting::bigint AS big_walked
FROM pg_settings WHERE name = 'shared_buffers';
UPDATE fl_small SET pad = 'updated' WHERE id % 3 = 0;
DELETE FROM fl_small WHERE id % 7 = 0;
INSERT INTO fl_small VALUES (9001, 'late');
SELECT ap_check('SELECT * FROM fl_small');
SELECT ap_check('SELECT count(*) AS n, count(*) FILTER (WHERE pad = ''updated'') AS updated FROM fl_small');
UPDATE fl_big SET pad = 'updated' WHERE id % 1000 = 0;
DELETE FROM fl_big WHERE id % 999 = 0;
SELECT ap_check('SELECT * FROM fl_big WHERE pad <> repeat(''b'', 100)');
SELECT ap_check('SELECT count(*) FROM fl_big');
DROP TABLE fl_small, fl_big;
