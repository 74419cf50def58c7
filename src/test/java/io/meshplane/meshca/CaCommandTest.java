package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.ChildJvm;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bouncycastle.cert.X509CertificateHolder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code meshplane ca init|sign|show} run through picocli in this JVM (and once through Main in a
 * child JVM), their files checked by openssl: the root and the intermediate it signs read by {@code
 * openssl x509}, the chain accepted by {@code openssl verify}, the encrypted key opened by {@code
 * openssl pkey} with the passphrase only.
 */
class CaCommandTest {
  static final String PASS = "correct horse battery staple";
  @TempDir Path tmp;

  record Result(int exit, String out, String err) {}

  /** The command in this JVM with {@code env} and a terminal that answers {@code typed} in turn (null: no terminal). */
  static Result ca(Map<String, String> env, Deque<char[]> typed, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(new CaCommand(env, q -> typed == null || typed.isEmpty() ? null : typed.poll()));
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int code = cli.execute(args);
    return new Result(code, out.toString(), err.toString());
  }

  static Result ca(String... args) {
    return ca(Map.of(), null, args);
  }

  Path passFile(String pass) throws Exception {
    Path f = tmp.resolve("pass-" + pass.length() + "-" + System.nanoTime());
    Files.writeString(f, pass + "\n");
    return f;
  }

  Path init(Path dir, String... more) throws Exception {
    List<String> args = new java.util.ArrayList<>(List.of("init", "--dir", dir.toString(), "--passphrase-file", passFile(PASS).toString()));
    args.addAll(List.of(more));
    Result r = ca(args.toArray(String[]::new));
    assertEquals(0, r.exit(), r.err());
    return dir;
  }

  /** A CSR made by openssl, asking for names and extensions none of which the intermediate gets. */
  Path opensslCsr(String name, String... keyOptions) throws Exception {
    List<String> args = new java.util.ArrayList<>(List.of("req", "-new"));
    args.addAll(List.of(keyOptions));
    args.addAll(List.of("-nodes", "-keyout", name + ".key", "-subj", "/CN=evil.example.com/O=Someone Else", "-addext",
        "basicConstraints=critical,CA:TRUE", "-addext", "subjectAltName=DNS:evil.example.com", "-out", name + ".csr"));
    OpenSsl.Result r = OpenSsl.run(tmp, args.toArray(String[]::new));
    assertEquals(0, r.exit(), r.output());
    return tmp.resolve(name + ".csr");
  }

  Path p256Csr(String name) throws Exception {
    return opensslCsr(name, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256");
  }

  static void assertOneLine(Result r, String contains) {
    assertEquals(2, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains(contains), r.err());
    assertEquals(1, r.err().strip().lines().count(), "one line: " + r.err());
    assertFalse(r.err().contains("Exception") || r.err().contains("\tat "), r.err());
  }

  @Test
  void initSignAndOpensslAcceptsTheChain() throws Exception {
    Path dir = tmp.resolve("offline-root");
    Result init = ca("init", "--dir", dir.toString(), "--trust-domain", "prod.example", "--passphrase-file", passFile(PASS).toString());
    assertEquals(0, init.exit(), init.err());
    assertFalse(init.out().contains(PASS) || init.out().contains("PRIVATE KEY"), init.out());
    for (String f : List.of("root.pem", "root-key.pem")) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(f))), f);
    }
    String key = Files.readString(dir.resolve("root-key.pem"));
    assertTrue(key.startsWith("-----BEGIN ENCRYPTED PRIVATE KEY-----"), key);
    OpenSsl.Result asn1 = OpenSsl.run(dir, "asn1parse", "-in", "root-key.pem");
    assertTrue(asn1.output().contains(":scrypt") && asn1.output().contains(":aes-256-cbc") && asn1.output().contains(":PBES2"), asn1.output());
    assertEquals(0, OpenSsl.run(dir, "pkey", "-in", "root-key.pem", "-passin", "pass:" + PASS, "-noout").exit());
    assertNotEquals(0, OpenSsl.run(dir, "pkey", "-in", "root-key.pem", "-passin", "pass:" + PASS + "x", "-noout").exit());
    // the key openssl decrypts is the root certificate's
    String keyPub = OpenSsl.run(dir, "pkey", "-in", "root-key.pem", "-passin", "pass:" + PASS, "-pubout").output();
    assertEquals(OpenSsl.run(dir, "x509", "-in", "root.pem", "-noout", "-pubkey").output(), keyPub);

    String root = OpenSsl.run(dir, "x509", "-in", "root.pem", "-noout", "-text").output();
    assertTrue(root.contains("Subject: O = Meshplane, CN = MeshCA root prod.example ca_"), root);
    assertTrue(root.contains("NIST CURVE: P-256") && root.contains("ecdsa-with-SHA256"), root);
    assertTrue(root.matches("(?s).*Basic Constraints: critical\\s+CA:TRUE\\s.*"), root);
    assertTrue(root.matches("(?s).*Key Usage: critical\\s+Certificate Sign, CRL Sign\\s.*"), root);
    assertTrue(root.contains("Subject Key Identifier"), root);
    assertNotAfterIn(root, Instant.now().plus(java.time.Duration.ofDays(3650)));

    Path csr = p256Csr("inter");
    Result sign = ca(Map.of(CaCommand.PASSPHRASE_ENV, PASS), null, "sign", "--dir", dir.toString(), "--csr", csr.toString(), "--out",
        tmp.resolve("intermediate.pem").toString());
    assertEquals(0, sign.exit(), sign.err());
    assertFalse(sign.out().contains(PASS), sign.out());
    String inter = OpenSsl.run(tmp, "x509", "-in", "intermediate.pem", "-noout", "-text").output();
    assertTrue(inter.matches("(?s).*Basic Constraints: critical\\s+CA:TRUE, pathlen:0\\s.*"), inter);
    assertTrue(inter.matches("(?s).*Key Usage: critical\\s+Certificate Sign, CRL Sign\\s.*"), inter);
    assertTrue(inter.contains("Authority Key Identifier") && inter.contains("Subject Key Identifier"), inter);
    assertTrue(inter.contains("Subject: O = Meshplane, CN = MeshCA intermediate "), inter);
    assertFalse(inter.contains("evil") || inter.contains("Someone Else") || inter.contains("Alternative Name"), "the CSR's asks are ignored: " + inter);
    assertNotAfterIn(inter, Instant.now().plus(java.time.Duration.ofDays(90)));
    OpenSsl.Result verify = OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "intermediate.pem");
    assertEquals(0, verify.exit(), verify.output());
    assertTrue(verify.output().contains("intermediate.pem: OK"), verify.output());
    // it certifies the CSR's key, and what it prints is what openssl sees
    assertEquals(OpenSsl.run(tmp, "req", "-in", "inter.csr", "-noout", "-pubkey").output(),
        OpenSsl.run(tmp, "x509", "-in", "intermediate.pem", "-noout", "-pubkey").output());
    String fp = OpenSsl.run(tmp, "x509", "-in", "intermediate.pem", "-noout", "-fingerprint", "-sha256").output().strip();
    assertTrue(sign.out().contains(fp.substring(fp.indexOf('=') + 1)), sign.out() + " vs " + fp);
    // the key's SPKI SHA-256, as the API names keys, from openssl's DER of the CSR's key
    Files.writeString(tmp.resolve("csr-pub.pem"), OpenSsl.run(tmp, "req", "-in", "inter.csr", "-noout", "-pubkey").output());
    assertEquals(0, OpenSsl.run(tmp, "pkey", "-pubin", "-in", "csr-pub.pem", "-outform", "DER", "-out", "csr-pub.der").exit());
    String spki = Pki.sha256Hex(Files.readAllBytes(tmp.resolve("csr-pub.der")));
    assertTrue(sign.out().contains("key SPKI SHA-256:    " + spki), sign.out());
    assertTrue(sign.out().contains("CN=MeshCA intermediate " + spki.substring(0, 16)), sign.out());
    String serial = OpenSsl.run(tmp, "x509", "-in", "intermediate.pem", "-noout", "-serial").output().strip();
    assertTrue(sign.out().contains(serial.substring(serial.indexOf('=') + 1).toLowerCase(Locale.ROOT)), sign.out() + " vs " + serial);

    // the intermediate does its job: a node certificate it signs (with openssl) verifies up to the root
    assertEquals(0, OpenSsl.run(tmp, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "node.key",
        "-subj", "/CN=node", "-out", "node.csr").exit());
    assertEquals(0, OpenSsl.run(tmp, "x509", "-req", "-in", "node.csr", "-CA", "intermediate.pem", "-CAkey", "inter.key", "-CAcreateserial",
        "-days", "1", "-out", "node.pem").exit());
    OpenSsl.Result chain = OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "-untrusted", "intermediate.pem", "node.pem");
    assertEquals(0, chain.exit(), chain.output());
    // path length 0: a CA below the intermediate is refused
    Files.writeString(tmp.resolve("ca.ext"), "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n");
    assertEquals(0, OpenSsl.run(tmp, "x509", "-req", "-in", "node.csr", "-CA", "intermediate.pem", "-CAkey", "inter.key", "-CAcreateserial",
        "-days", "1", "-extfile", "ca.ext", "-out", "sub.pem").exit());
    Files.writeString(tmp.resolve("sub-chain.pem"), Files.readString(tmp.resolve("sub.pem")) + Files.readString(tmp.resolve("intermediate.pem")));
    assertEquals(0, OpenSsl.run(tmp, "x509", "-req", "-in", "inter.csr", "-CA", "sub.pem", "-CAkey", "node.key", "-CAcreateserial",
        "-days", "1", "-out", "below.pem").exit());
    OpenSsl.Result tooDeep = OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "-untrusted", "sub-chain.pem", "below.pem");
    assertNotEquals(0, tooDeep.exit(), tooDeep.output());
    assertTrue(tooDeep.output().contains("path length constraint exceeded"), tooDeep.output());

    // ca show: the root, and the intermediate checked against it
    Result showRoot = ca("show", "--dir", dir.toString());
    assertEquals(0, showRoot.exit(), showRoot.err());
    assertTrue(showRoot.out().contains("CA:                  yes, no path length limit") && showRoot.out().contains("ECDSA P-256"), showRoot.out());
    Result show = ca("show", "--dir", dir.toString(), "--cert", tmp.resolve("intermediate.pem").toString());
    assertEquals(0, show.exit(), show.err());
    assertTrue(show.out().contains("yes, path length 0") && show.out().contains("an intermediate of this root, valid now"), show.out());
    assertTrue(show.out().contains(fp.substring(fp.indexOf('=') + 1)), show.out());
    // a certificate that is no intermediate of this root: printed, then refused (exit 2, one line)
    Result node = ca("show", "--dir", dir.toString(), "--cert", tmp.resolve("node.pem").toString());
    assertOneLine(node, "is no intermediate of");
    assertTrue(node.out().contains("subject:") && node.err().contains("is issued by"), node.out() + node.err());
  }

  static void assertNotAfterIn(String text, Instant expected) {
    Matcher m = Pattern.compile("Not After : (.+ GMT)").matcher(text);
    assertTrue(m.find(), text);
    Instant notAfter = DateTimeFormatter.ofPattern("MMM ppd HH:mm:ss yyyy zzz", Locale.ROOT).parse(m.group(1), Instant::from);
    assertTrue(Math.abs(notAfter.getEpochSecond() - expected.getEpochSecond()) < 120, notAfter + " vs " + expected);
  }

  @Test
  void anIntermediateNeverOutlivesItsRoot() throws Exception {
    Path dir = init(tmp.resolve("short"), "--lifetime", "30d");
    Result sign = ca(Map.of(CaCommand.PASSPHRASE_ENV, PASS), null, "sign", "--dir", dir.toString(), "--csr", p256Csr("i").toString(),
        "--out", tmp.resolve("i.pem").toString(), "--lifetime", "1y");
    assertEquals(0, sign.exit(), sign.err());
    assertTrue(sign.out().contains("cut to the root's notAfter"), sign.out());
    X509CertificateHolder root = OfflineCa.certificates(dir.resolve("root.pem"), "root").get(0);
    X509CertificateHolder inter = OfflineCa.certificates(tmp.resolve("i.pem"), "i").get(0);
    assertEquals(root.getNotAfter(), inter.getNotAfter());
    assertEquals(0, OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "i.pem").exit());
  }

  @Test
  void anEd25519CsrIsSigned() throws Exception {
    Path dir = init(tmp.resolve("ed"));
    Result sign = ca(Map.of(CaCommand.PASSPHRASE_ENV, PASS), null, "sign", "--dir", dir.toString(), "--csr",
        opensslCsr("ed", "-newkey", "ed25519").toString(), "--out", tmp.resolve("ed.pem").toString());
    assertEquals(0, sign.exit(), sign.err());
    assertTrue(sign.out().contains("key:                 Ed25519"), sign.out());
    assertEquals(0, OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "ed.pem").exit());
  }

  @Test
  void initRefusesToWriteOverARootAShortPassphraseAndNoPassphrase() throws Exception {
    Path dir = init(tmp.resolve("r"));
    byte[] cert = Files.readAllBytes(dir.resolve("root.pem"));
    byte[] key = Files.readAllBytes(dir.resolve("root-key.pem"));
    Result again = ca("init", "--dir", dir.toString(), "--passphrase-file", passFile(PASS).toString());
    assertOneLine(again, "exists already");
    assertTrue(java.util.Arrays.equals(cert, Files.readAllBytes(dir.resolve("root.pem"))));
    assertTrue(java.util.Arrays.equals(key, Files.readAllBytes(dir.resolve("root-key.pem"))));
    // one of the two is enough to refuse
    Path half = tmp.resolve("half");
    Files.createDirectories(half);
    Files.writeString(half.resolve("root-key.pem"), "someone's key");
    assertOneLine(ca("init", "--dir", half.toString(), "--passphrase-file", passFile(PASS).toString()), "exists already");
    assertFalse(Files.exists(half.resolve("root.pem")));

    Path shortDir = tmp.resolve("short");
    Result tooShort = ca(Map.of(CaCommand.PASSPHRASE_ENV, "elevenchars"), null, "init", "--dir", shortDir.toString());
    assertOneLine(tooShort, "shorter than 12 characters");
    assertFalse(Files.exists(shortDir.resolve("root.pem")) || Files.exists(shortDir.resolve("root-key.pem")));
    assertFalse(tooShort.err().contains("elevenchars"));

    assertOneLine(ca("init", "--dir", shortDir.toString()), "no passphrase");
    Deque<char[]> differ = new ArrayDeque<>(List.of(PASS.toCharArray(), (PASS + "!").toCharArray()));
    assertOneLine(ca(Map.of(), differ, "init", "--dir", shortDir.toString()), "the two passphrases typed differ");
    assertFalse(Files.exists(shortDir.resolve("root-key.pem")));
    // typed twice on the terminal, the same: made
    Deque<char[]> same = new ArrayDeque<>(List.of(PASS.toCharArray(), PASS.toCharArray()));
    Result typed = ca(Map.of(), same, "init", "--dir", shortDir.toString(), "--lifetime", "5y");
    assertEquals(0, typed.exit(), typed.err());
    assertEquals(0, OpenSsl.run(shortDir, "pkey", "-in", "root-key.pem", "-passin", "pass:" + PASS, "-noout").exit());

    assertOneLine(ca("init", "--dir", tmp.resolve("x").toString(), "--trust-domain", "Bad Domain", "--passphrase-file",
        passFile(PASS).toString()), "--trust-domain");
    assertOneLine(ca("init", "--dir", tmp.resolve("x").toString(), "--lifetime", "forever", "--passphrase-file",
        passFile(PASS).toString()), "--lifetime");
  }

  @Test
  void signRefusesBadCsrsAWrongPassphraseAndAnExistingFile() throws Exception {
    Path dir = init(tmp.resolve("r"));
    Map<String, String> env = Map.of(CaCommand.PASSPHRASE_ENV, PASS);
    Path out = tmp.resolve("out.pem");

    Result rsa = ca(env, null, "sign", "--dir", dir.toString(), "--csr", opensslCsr("rsa", "-newkey", "rsa:2048").toString(), "--out",
        out.toString());
    assertOneLine(rsa, "has a RSA key: only ECDSA P-256 or Ed25519 keys are accepted");
    Result p384 = ca(env, null, "sign", "--dir", dir.toString(), "--csr",
        opensslCsr("p384", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384").toString(), "--out", out.toString());
    assertOneLine(p384, "another curve than P-256");

    // a CSR whose signature does not verify: one bit of openssl's signature flipped
    p256Csr("good");
    assertEquals(0, OpenSsl.run(tmp, "req", "-in", "good.csr", "-outform", "DER", "-out", "good.der").exit());
    byte[] der = Files.readAllBytes(tmp.resolve("good.der"));
    der[der.length - 3] ^= 0x01;
    Path bad = tmp.resolve("bad.csr");
    Files.writeString(bad, Pki.pem("CERTIFICATE REQUEST", der));
    // (openssl 3.0's req -verify exits 0 either way; its words differ)
    String opensslSays = OpenSsl.run(tmp, "req", "-in", "bad.csr", "-verify", "-noout").output();
    assertTrue(opensslSays.contains("verify failure"), "openssl agrees the signature is bad: " + opensslSays);
    assertTrue(OpenSsl.run(tmp, "req", "-in", "good.csr", "-verify", "-noout").output().contains("verify OK"));
    assertOneLine(ca(env, null, "sign", "--dir", dir.toString(), "--csr", bad.toString(), "--out", out.toString()), "signature does not verify");
    Files.writeString(tmp.resolve("junk.csr"), "-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgQ1NS\n-----END CERTIFICATE REQUEST-----\n");
    assertOneLine(ca(env, null, "sign", "--dir", dir.toString(), "--csr", tmp.resolve("junk.csr").toString(), "--out", out.toString()),
        "not a PKCS#10");

    Path good = tmp.resolve("good.csr");
    Result wrong = ca(Map.of(CaCommand.PASSPHRASE_ENV, PASS + "?"), null, "sign", "--dir", dir.toString(), "--csr", good.toString(), "--out",
        out.toString());
    assertOneLine(wrong, "root-key.pem does not open with this passphrase");
    assertFalse(Files.exists(out));
    assertOneLine(ca(Map.of(), null, "sign", "--dir", dir.toString(), "--csr", good.toString(), "--out", out.toString()), "no passphrase");

    // another root's key beside this root's certificate
    Path other = init(tmp.resolve("other"));
    Path mixed = tmp.resolve("mixed");
    Files.createDirectories(mixed);
    Files.copy(dir.resolve("root.pem"), mixed.resolve("root.pem"));
    Files.copy(other.resolve("root-key.pem"), mixed.resolve("root-key.pem"));
    assertOneLine(ca(env, null, "sign", "--dir", mixed.toString(), "--csr", good.toString(), "--out", out.toString()),
        "is not the private key of the root certificate");

    // a DER CSR is read as well as PEM
    Result fromDer = ca(env, null, "sign", "--dir", dir.toString(), "--csr", tmp.resolve("good.der").toString(), "--out",
        tmp.resolve("from-der.pem").toString());
    assertEquals(0, fromDer.exit(), fromDer.err());
    assertEquals(0, OpenSsl.run(tmp, "verify", "-CAfile", dir.resolve("root.pem").toString(), "from-der.pem").exit());

    Files.writeString(out, "already here");
    assertOneLine(ca(env, null, "sign", "--dir", dir.toString(), "--csr", good.toString(), "--out", out.toString()), "exists already");
    assertEquals("already here", Files.readString(out));
    assertOneLine(ca(env, null, "sign", "--dir", tmp.resolve("none").toString(), "--csr", good.toString(), "--out", out.toString()),
        "does not exist");
  }

  /** Through Main, as an operator runs it: a wrong passphrase is exit code 2 and one line on stderr, no stack trace. */
  @Test
  void aWrongPassphraseThroughMainIsExitCodeTwoAndOneLine() throws Exception {
    Path dir = init(tmp.resolve("r"));
    Path csr = p256Csr("m");
    Path err = tmp.resolve("err.txt");
    Map<String, String> env = new HashMap<>(Map.of(CaCommand.PASSPHRASE_ENV, "not the passphrase at all"));
    Process p = ChildJvm.launch(tmp, env, err, tmp.resolve("out.txt"), "ca", "sign", "--dir", dir.toString(), "--csr", csr.toString(),
        "--out", tmp.resolve("m.pem").toString());
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "ca sign did not finish");
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    assertEquals(2, p.exitValue(), stderr);
    assertEquals("ca sign refused: " + dir.resolve("root-key.pem") + " does not open with this passphrase", stderr.strip());
    assertEquals("", Files.readString(tmp.resolve("out.txt")));
    assertFalse(Files.exists(tmp.resolve("m.pem")));
  }
}
