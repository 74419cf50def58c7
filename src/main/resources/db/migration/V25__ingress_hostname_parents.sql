-- A wildcard route holds the names one label under it (API.md §19): "*.example.com" of one team and
-- "a.example.com" of another conflict. The names one label under a wildcard are those whose parent (the
-- name after its first label) is the wildcard's: an equality on this expression. The check runs under the
-- change log's clock lock, so its cost must not grow with the tables: the routes' index carries the team,
-- and the check reads the other teams' side of it only (team < $t, team > $t), never the team's own names.
CREATE INDEX ingress_routes_hostname_parent ON ingress_routes ((substr(hostname, strpos(hostname, '.') + 1)), team);
CREATE INDEX ingress_hostnames_hostname_parent ON ingress_hostnames ((substr(hostname, strpos(hostname, '.') + 1)));
