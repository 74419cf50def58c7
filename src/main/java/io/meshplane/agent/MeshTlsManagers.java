package io.meshplane.agent;

import java.net.Socket;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.function.Consumer;
import java.util.function.Supplier;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The key and trust managers of the mesh TLS listener and dialer. Both read the node's latest
 * {@link MeshIdentity} at each handshake (never a copy taken when the listener started): a renewed
 * certificate is presented, a new bundle trusted and a new revocation refused from the next handshake
 * on, without a restart. The trust manager's verdict is {@link PeerVerdict#judge}, the same both ways.
 */
final class MeshTlsManagers {
  private MeshTlsManagers() {}

  /** Presents the node's current certificate and key; the alias names the serial, so a handshake uses one copy throughout. */
  static X509ExtendedKeyManager keyManager(Supplier<MeshIdentity> identity) {
    return new X509ExtendedKeyManager() {
      /** The copy the last alias was chosen from (a renewal between choosing and reading must not mix two certificates). */
      private volatile MeshIdentity chosen = MeshIdentity.NONE;

      private String alias(String[] keyTypes) {
        MeshIdentity id = identity.get();
        if (!id.usable()) return null;
        String algorithm = id.key().getAlgorithm();
        boolean fits = keyTypes == null;
        if (keyTypes != null) for (String t : keyTypes) fits |= t != null && t.startsWith(algorithm);
        if (!fits) return null;
        chosen = id;
        return "mesh-" + id.serial();
      }

      private MeshIdentity of(String alias) {
        MeshIdentity now = identity.get();
        if (now.usable() && alias != null && alias.equals("mesh-" + now.serial())) return now;
        MeshIdentity before = chosen;
        return before.usable() && alias != null && alias.equals("mesh-" + before.serial()) ? before : null;
      }

      @Override
      public String[] getClientAliases(String keyType, Principal[] issuers) {
        String a = alias(new String[] {keyType});
        return a == null ? null : new String[] {a};
      }

      @Override
      public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
        return alias(keyType);
      }

      @Override
      public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
        return alias(keyType);
      }

      @Override
      public String[] getServerAliases(String keyType, Principal[] issuers) {
        return getClientAliases(keyType, issuers);
      }

      @Override
      public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
        return alias(new String[] {keyType});
      }

      @Override
      public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
        return alias(new String[] {keyType});
      }

      @Override
      public X509Certificate[] getCertificateChain(String alias) {
        MeshIdentity id = of(alias);
        return id == null ? null : id.chain().toArray(new X509Certificate[0]);
      }

      @Override
      public PrivateKey getPrivateKey(String alias) {
        MeshIdentity id = of(alias);
        return id == null ? null : id.key();
      }
    };
  }

  /**
   * Judges the peer's chain with {@link PeerVerdict#judge}: the listener's ({@code asServer} false: the
   * peer is a client) or the dialer's. Every verdict goes to {@code seen}; anything but {@code trusted}
   * fails the handshake.
   */
  static X509ExtendedTrustManager trustManager(Supplier<MeshIdentity> identity, boolean peerIsServer, String expectedNode, Consumer<PeerVerdict> seen) {
    return new X509ExtendedTrustManager() {
      private void check(X509Certificate[] chain, boolean asServer) throws CertificateException {
        if (asServer != peerIsServer) throw new CertificateException("this trust manager judges " + (peerIsServer ? "servers" : "clients") + " only");
        PeerVerdict v = PeerVerdict.judge(identity.get(), chain, asServer, expectedNode, System.currentTimeMillis());
        seen.accept(v);
        if (!v.trusted()) throw new CertificateException(v.verdict() + ": " + v.reason());
      }

      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        check(chain, false);
      }

      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        check(chain, false);
      }

      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        check(chain, false);
      }

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        check(chain, true);
      }

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        check(chain, true);
      }

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        check(chain, true);
      }

      @Override
      public X509Certificate[] getAcceptedIssuers() {
        return identity.get().bundle().toArray(new X509Certificate[0]);
      }
    };
  }
}
