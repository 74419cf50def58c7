"""Writes src/main/resources/waf/managed-rules.json (regexes are easier to write here, in raw strings,
than escaped twice in JSON). Run from the repository root: python3 src/test/resources/waf/make_managed_rules.py"""
import os
import json
A = "request.args_text"
def m(target, rx):
    assert "'''" not in rx
    return "%s.matches(r'''%s''')" % (target, rx)
def deny(title, status=403): return {"type": "deny", "status": status, "title": title}
rules = []
def rule(id, cls, pl, desc, expr, action):
    rules.append({"id": id, "class": cls, "paranoia": pl, "description": desc, "expression": expr, "action": action})

SQ = r"""['"`]"""
rule("mp-sqli-001", "sqli", 1, "UNION-based injection: UNION [ALL] SELECT",
     m(A, r"(?i)\bunion\b[\s(/*!]+(all\s+|distinct\s+)?[\s(/*!]*select\b"), deny("SQL injection"))
rule("mp-sqli-002", "sqli", 1, "Tautology after a closing quote or number: ' OR 'a'='a, 1 OR 1=1",
     m(A, r"(?i)(" + SQ + r"\s*\)?\s*\b(or|and|xor)\b\s*\(?\s*(" + SQ + r"?[\w-]*" + SQ + r"?\s*(=|<>|!=|<|>|\blike\b|\bregexp\b)|\d+\s*[=<>]|true\b|false\b|null\b)|\b(or|and)\s+\d+\s*(=|<>|<|>)\s*\d+|" + SQ + r"\s*(or|\|\|)\s*" + SQ + r"\w*" + SQ + r"\s*=|(?m)^\s*-?\d+\s*\)?\s*\b(or|and)\b\s+(true|false|\(?\s*\d+\s*[=<>]))"),
     deny("SQL injection"))
rule("mp-sqli-003", "sqli", 1, "A closing quote followed by a comment or a stacked statement",
     m(A, r"(?im)" + SQ + r"\s*\)?\s*(;\s*(select|insert|update|delete|drop|create|alter|exec|execute|declare|shutdown|truncate|waitfor|grant)\b|(--|#)[^\n]*$|/\*)|" + SQ + r"\s*\)?\s*\b(and|or|order\s+by|group\s+by|having|union|where|limit|procedure)\b[^\n]*(--|#)[^\n]*$"),
     deny("SQL injection"))
rule("mp-sqli-004", "sqli", 1, "Database functions and catalogues attacks use: SLEEP(, BENCHMARK(, WAITFOR DELAY, information_schema, xp_cmdshell, ...",
     m(A, r"(?i)(\b(sleep|pg_sleep)\s*\(\s*\d|\bbenchmark\s*\(|\bwaitfor\s+(delay|time)\s+'|\bload_file\s*\(|\binto\s+(out|dump)file\b|\binformation_schema\b|\bxp_cmdshell\b|\bsys\.(objects|tables|columns|user_objects)\b|\bmysql\.user\b|\bpg_(shadow|catalog|user)\b|\bextractvalue\s*\(|\bupdatexml\s*\(|\bdbms_pipe\.|\butl_(inaddr|http)\.|\bsqlite_master\b|@@version\b|\bversion\s*\(\s*\)|\bchr\s*\(\s*\d+\s*\)\s*\|\||\bchar\s*\(\s*\d+\s*(,\s*\d+\s*){2,}\))"),
     deny("SQL injection"))
rule("mp-sqli-005", "sqli", 1, "A statement stacked after a semicolon: ; DROP TABLE, ; DELETE FROM, ...",
     m(A, r"(?i);\s*(drop\s+(table|database)|truncate\s+table|delete\s+from|insert\s+into|update\s+\w+\s+set|alter\s+table|create\s+(table|user)|shutdown\b|exec(ute)?\s+(xp_|sp_|master\.))"),
     deny("SQL injection"))
rule("mp-sqli-006", "sqli", 2, "SQL statement shapes anywhere in a value (PL2: prose can look like this)",
     m(A, r"(?i)(\bselect\b[^\n]{0,100}\bfrom\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\b[^\n]{0,60}\bset\b[^\n]{0,60}=|\bdrop\s+(table|database)\b|\bexec(ute)?\s*\(|\bcast\s*\([^\n]{0,60}\bas\b|\bconcat(_ws)?\s*\(|\bgroup_concat\s*\(|\bhaving\b\s+\d|\border\s+by\s+\d+\s*(--|#|$)|\bunion\b[^\n]{0,40}\bselect\b)"),
     deny("SQL injection"))
rule("mp-sqli-007", "sqli", 2, "Comment and quote tricks: /**/ between words, quote concatenation, a value that is a lone quote",
     m(A, r"(?im)(\w/\*[^\n]*?\*/\w|/\*!\d*|" + SQ + r"\s*(\+|\|\|)\s*" + SQ + r"|^\s*" + SQ + r"\s*$|^\s*\d+\s*" + SQ + r"\s*\)?\s*$|\b(and|or)\b\s*" + SQ + r"\s*$)"),
     deny("SQL injection"))

rule("mp-xss-001", "xss", 1, "A script element", m(A, r"(?i)<\s*/?\s*script\b|&#x0*3c;?\s*/?\s*script\b|&#0*60;?\s*/?\s*script\b|&lt;\s*/?\s*script\b"), deny("Cross-site scripting"))
rule("mp-xss-002", "xss", 1, "An element with an event-handler attribute: <img onerror=, <svg/onload=",
     m(A, r"(?i)<[a-z][a-z0-9:-]*[\s/][^>]*\bon[a-z]{3,}\s*="), deny("Cross-site scripting"))
rule("mp-xss-003", "xss", 1, "A javascript:/vbscript:/data:text/html URL as a value or in a URL attribute",
     m(A, r"(?im)(^\s*(javascript|vbscript|livescript)\s*:|(href|src|action|formaction|data|xlink:href)\s*=\s*['\"]?\s*(javascript|vbscript|data\s*:\s*text/html)\s*:?|\bdata\s*:\s*text/html\s*;\s*base64|\burl\s*\(\s*['\"]?\s*(javascript|vbscript)\s*:|['\"]\s*\bon(mouse[a-z]+|focus|blur|load|error|click|key[a-z]+|toggle|begin|start|animation[a-z]*|pointer[a-z]+)\s*=)"),
     deny("Cross-site scripting"))
rule("mp-xss-004", "xss", 1, "Elements that load or run content: iframe, object, embed, applet, frameset",
     m(A, r"(?i)<\s*(iframe|object|embed|applet|frameset|frame)\b"), deny("Cross-site scripting"))
rule("mp-xss-005", "xss", 2, "Other active elements: svg, math, meta, base, link, style, img with a source, form",
     m(A, r"(?i)<\s*(svg|math|meta|base|link|style|form|isindex|details|marquee|video|audio|body|input)\b|<\s*img\b[^>]*\bsrc\s*="), deny("Cross-site scripting"))
rule("mp-xss-006", "xss", 2, "Script-like calls and DOM sinks: alert(, eval(, document.cookie, innerHTML=, fromCharCode, HTML-encoded angle brackets",
     m(A, r"(?i)(\b(alert|prompt|confirm|eval|settimeout|setinterval)\s*(\(|`)|\bdocument\s*\.\s*(cookie|domain|write)|\bwindow\s*\.\s*(location|name)\b|\.innerhtml\s*=|\bstring\s*\.\s*fromcharcode\b|&#x?0*(3c|60|x3c);?|\\u003c|\bexpression\s*\()"),
     deny("Cross-site scripting"))

rule("mp-lfi-001", "traversal", 1, "Dot-dot segments in the path as sent (encoded or not), or in a value",
     m("request.path", r"(?i)(^|/|\\|%2f|%5c)(\.|%2e|%252e|%c0%ae|%u002e){2}(/|\\|%2f|%5c|%252f|$)") + " || " +
     m(A, r"(?im)(^|[\\/=])\.\.([\\/]|%2f|%5c)|[\\/]\.\.$|^\.\.$|\.\.\.\.[\\/]{1,2}"), deny("Path traversal"))
LFI2 = r"(?im)(/etc/(passwd|shadow|group|hosts|issue)\b|/proc/(self|\d+)/|\bboot\.ini\b|\bwin\.ini\b|\\windows\\|c:\\windows|/windows/system32|\.ht(access|passwd)\b|/\.git(/|$)|/\.svn(/|$)|(^|/)\.env\b|\bweb\.config\b|\bid_(rsa|dsa|ed25519)\b|/\.aws/credentials|/\.ssh/)"
rule("mp-lfi-002", "traversal", 1, "Well-known sensitive files in the path or a value",
     m("request.path_normalized", LFI2) + " || " + m(A, LFI2), deny("Path traversal"))
rule("mp-lfi-003", "traversal", 1, "A NUL byte in the path or a value (truncation tricks)",
     m("request.path", r"(?i)%00") + " || " + A + ".contains('\\u0000') || " + m(A, r"(?i)%00"), deny("Path traversal"))
rule("mp-lfi-004", "traversal", 1, "Stream wrappers that read local files or run code: php://, phar://, file://, expect://",
     m(A, r"(?i)\b(php|phar|zip|expect|glob|file|gopher|dict|jar|compress\.zlib|ogg|rar)://"), deny("Path traversal"))

rule("mp-rfi-001", "rfi", 1, "A remote URL to a script, or ending in ?, as a whole value (remote file inclusion)",
     m(A, r"(?im)^\s*(https?|ftps?)://[^\s?#]+\.(php\d?|phtml|txt|jsp|asp|aspx|pl|cgi|sh|inc)(\?[^\n]*)?$|^\s*(https?|ftps?)://[^\s]+\?+$"),
     deny("Remote file inclusion"))
rule("mp-rfi-002", "rfi", 2, "A URL in a parameter whose name says it is included (file, page, include, template, ...)",
     "['file', 'page', 'include', 'inc', 'path', 'template', 'tpl', 'dir', 'doc', 'document', 'folder', 'root', 'load', 'module', 'view', 'conf', 'config']"
     ".exists(n, n in request.query && request.query[n].exists(v, v.matches(r'''(?i)^\\s*(https?|ftps?|file|php|data)://''')))",
     deny("Remote file inclusion"))
rule("mp-rfi-003", "rfi", 2, "A URL to a bare IP address as a value", m(A, r"(?im)^\s*(https?|ftps?)://\d{1,3}(\.\d{1,3}){3}(:\d+)?(/|$)"),
     deny("Remote file inclusion"))

rule("mp-rce-001", "rce", 1, "Shell commands chained after a separator: ;cat /etc/passwd, | id, $(whoami), `uname`",
     m(A, r"(?i)(;|\|\|?|&&|\$\(|`)\s*(cat|id|whoami|uname|wget|curl|nc|ncat|netcat|bash|sh|zsh|python[23]?|perl|ruby|php|ping|nslookup|rm|chmod|echo|sleep|busybox|powershell|cmd)\b(\s+[-/$.\w]|\s*$|\s*[;|&`)])"),
     deny("Command injection"))
RCE2 = r"(?i)\$\{\s*(jndi|env|sys|java|lower|upper|date|ctx|::-)|\$\{[^}\n]*\$\{|\(\)\s*\{\s*:\s*;\s*\}|\{\{\s*[\d\w.]+\s*[*+]\s*[\d\w.]+\s*\}\}|#\{[^}\n]*(runtime|exec|system)|\bruntime\s*\.\s*getruntime\s*\("
rule("mp-rce-002", "rce", 1, "Lookup and template injection: ${jndi:, ${env:, #{...}, {{7*7}}, Shellshock",
     m(A, RCE2) + " || ['user-agent', 'referer', 'x-forwarded-for', 'x-api-version', 'cookie'].exists(h, h in request.headers && request.headers[h].exists(v, " + m("v", RCE2) + "))",
     deny("Code injection"))
rule("mp-scan-001", "scanner", 1, "User agents of attack and scanning tools",
     "'user-agent' in request.headers && request.headers['user-agent'].exists(u, " +
     m("u", r"(?i)(sqlmap|nikto|nmap|masscan|zgrab|nuclei|acunetix|netsparker|w3af|dirbuster|gobuster|\bdirb\b|wpscan|havij|arachni|openvas|nessus|burpcollaborator|\bzap/|owasp[ _-]?zap|wfuzz|ffuf|commix|jaeles|whatweb|fimap|skipfish|xsser|appscan|webinspect|paros|grabber|jorgee|morfeus|zmeu|brutus|hydra|medusa|fuzz faster u fool)") + ")",
     deny("Automated scanner"))
rule("mp-scan-002", "scanner", 2, "No User-Agent at all", "!('user-agent' in request.headers) || request.headers['user-agent'].all(u, u.matches(r'^\\s*$'))",
     deny("Automated client"))

rule("mp-body-001", "body", 1, "A body over 10 MiB", "request.body_size > 10485760", deny("Request body too large", 413))
rule("mp-body-002", "body", 1, "A JSON body that does not parse (read whole: within the 8 KiB inspected)",
     "request.body_malformed", deny("Malformed JSON body", 400))
rule("mp-body-003", "body", 1, "More parameters, headers or longer values than the WAF inspects",
     "request.overflow", deny("Request too complex to inspect", 400))
rule("mp-body-004", "body", 2, "Invalid percent-encoding in the path or a parameter", "request.encoding_malformed",
     deny("Malformed URL encoding", 400))
rule("mp-body-005", "body", 2, "A form or JSON body longer than the inspected prefix (8 KiB): logged, since the rest was not seen",
     "request.body_truncated && (request.content_type.startsWith('application/json') || request.content_type.startsWith('application/x-www-form-urlencoded'))",
     {"type": "log"})
rule("mp-proto-001", "protocol", 1, "A method outside the usual HTTP methods (TRACE, TRACK, DEBUG, made-up ones)",
     "!(request.method in ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])", deny("Method not allowed", 405))

doc = {"version": "2026-11-28.1",
       "about": "Meshplane's managed WAF rules (docs/ARCHITECTURE.md, WAF). Written for this project from public knowledge of attack classes.",
       "rules": rules}
open("src/main/resources/waf/managed-rules.json", "w").write(json.dumps(doc, indent=1) + "\n")
print(len(rules))
