-- The message store's database, beside Temporal's own (created by the
-- Temporal server's auto-setup). The worker creates its tables itself.
CREATE DATABASE dex;
