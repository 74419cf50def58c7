package io.meshplane.testing;

import io.meshplane.app.Meshplane;
import io.meshplane.audit.Actor;
import io.meshplane.common.RequestInfo;
import io.meshplane.meshca.MeshcaModule;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;

/** MeshCA node certificates for tests outside the meshca package: issued for an enrolled node as its heartbeat's CSR would get them. */
public final class Certificates {
  private Certificates() {}

  /** A certificate for {@code n} (enrolled in {@code team}/{@code environment}), from a CSR of a new ECDSA P-256 key. */
  public static MeshcaModule.Issuance.Issued issue(Meshplane app, Nodes.Enrolled n, String team, String environment) throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    KeyPair pair = g.generateKeyPair();
    String csr = Base64.getEncoder().encodeToString(new JcaPKCS10CertificationRequestBuilder(new X500Name("CN=x"), pair.getPublic())
        .build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())).getEncoded());
    MeshcaModule.NodeIdentity id = new MeshcaModule.NodeIdentity(n.id(), team, environment,
        n.node().getString("address").replaceAll("/.*", ""), n.node().getString("public_key"));
    MeshcaModule.Issuance out = app.meshca().issue(new Actor("node", n.id(), n.name()), RequestInfo.NONE, id, csr).toCompletionStage()
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    if (!(out instanceof MeshcaModule.Issuance.Issued issued)) throw new AssertionError("not issued: " + out);
    return issued;
  }

  /** Moves a certificate's 24-hour lifetime in PostgreSQL so that it ends {@code endsIn} from now (negative: it has expired). */
  public static void shift(TestCluster cluster, String serial, Duration endsIn) throws Exception {
    Instant end = Instant.now().plus(endsIn);
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      int n = st.executeUpdate("UPDATE meshca_certificates SET not_before = '" + end.minus(Duration.ofHours(24)) + "', not_after = '" + end
          + "' WHERE serial = '" + serial + "'");
      if (n != 1) throw new AssertionError("no certificate " + serial);
    }
  }
}
