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
