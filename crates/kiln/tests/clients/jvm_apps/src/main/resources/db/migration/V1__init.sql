CREATE TABLE fw_owner (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
CREATE TABLE fw_pet (id bigserial PRIMARY KEY, owner_id int NOT NULL REFERENCES fw_owner (id) ON DELETE CASCADE, kind varchar(20) CHECK (kind IN ('cat', 'dog')), born date);
CREATE INDEX fw_pet_owner ON fw_pet (owner_id);
