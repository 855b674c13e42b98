-- The feeds order changes by transaction id (0005); the earlier change sequence is no longer read.
ALTER TABLE agents DROP COLUMN change_seq;
ALTER TABLE posts DROP COLUMN change_seq;
DROP SEQUENCE change_seq;
