-- A wildcard route holds the names one label under it (API.md §19): "*.example.com" of one team and
-- "a.example.com" of another conflict. Finding the names under a wildcard is a range over the reversed
-- hostname ("moc.elpmaxe." < reverse(h) < "moc.elpmaxe/"), which these indexes answer without reading
-- the tables: the check runs under the change log's clock lock, so its cost must not grow with them.
-- Byte order ("C"): hostnames are lower-case LDH, '*' and '.', whatever the database's collation.
CREATE INDEX ingress_routes_hostname_reversed ON ingress_routes ((reverse(hostname) COLLATE "C"));
CREATE INDEX ingress_hostnames_hostname_reversed ON ingress_hostnames ((reverse(hostname) COLLATE "C"));
