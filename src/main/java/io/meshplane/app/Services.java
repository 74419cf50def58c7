package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.AuditLog;
import io.meshplane.auth.TokenIssuer;
import io.meshplane.auth.TokenService;
import io.meshplane.auth.TokenUsage;
import io.meshplane.auth.TokenVerifier;
import io.meshplane.heartbeat.LiveState;
import io.meshplane.heartbeat.Staleness;
import io.meshplane.node.NodeRepository;
import io.meshplane.node.NodeService;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;

/**
 * The shared, thread-safe services of one replica, built once at the wiring point and handed to every
 * verticle instance. Features take what they need from here; nothing else is global.
 */
public record Services(
    MeshConfig config,
    Vertx vertx,
    HazelcastInstance hazelcast,
    Pool pool,
    Observability observability,
    Readiness readiness,
    TokenVerifier verifier,
    TokenIssuer issuer,
    TokenService tokens,
    TokenUsage tokenUsage,
    AuditLog audit,
    LiveState live,
    Staleness staleness,
    NodeRepository nodeRepository,
    NodeService nodes) {}
