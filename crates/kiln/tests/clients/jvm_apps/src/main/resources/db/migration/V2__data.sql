ALTER TABLE fw_pet ADD COLUMN name text NOT NULL DEFAULT 'anon';
INSERT INTO fw_owner (name) VALUES ('ann'), ('bob');
INSERT INTO fw_pet (owner_id, kind, born) VALUES (1, 'cat', '2020-01-02'), (2, 'dog', NULL);
