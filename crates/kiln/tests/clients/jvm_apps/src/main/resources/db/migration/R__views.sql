CREATE OR REPLACE VIEW fw_pets_v AS SELECT o.name AS owner, p.kind FROM fw_owner o JOIN fw_pet p ON p.owner_id = o.id;
