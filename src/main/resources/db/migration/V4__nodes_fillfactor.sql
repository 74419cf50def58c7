-- The write-behind rewrites each node's live columns up to once per flush interval, none of them
-- indexed: with free space on the page PostgreSQL updates the row in place (a HOT update, no new
-- entry in the table's four indexes). At the default fillfactor of 100 a quarter of those updates
-- found their page full and paid for four index insertions each (measured: 75 % HOT with 10,000
-- nodes flushed every second; 97 % at 70). The free 30 % takes the new versions, and pruning on the
-- page reclaims the old ones once no transaction needs them.
-- Applies to pages written from now on; VACUUM FULL (or pg_repack) rewrites existing ones.
ALTER TABLE nodes SET (fillfactor = 70);
