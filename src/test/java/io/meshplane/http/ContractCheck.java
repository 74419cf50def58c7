package io.meshplane.http;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.ValidationReport;
import io.meshplane.testing.Http;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Sends real requests to a replica and checks each exchange against the OpenAPI document with a
 * maintained validator (Atlassian's swagger-request-validator): the request and the answer, or only
 * the answer when the request is wrong on purpose (a 4xx). What does not match is collected in
 * {@link #findings()}, for the test to assert empty.
 */
final class ContractCheck {
  private final Http http;
  private final int port;
  private final OpenApiInteractionValidator validator;
  private final List<String> findings = new ArrayList<>();

  ContractCheck(Http http, int port, String document) {
    this.http = http;
    this.port = port;
    this.validator = OpenApiInteractionValidator.createForInlineApiSpecification(document).build();
  }

  List<String> findings() {
    return findings;
  }

  /** One exchange; {@code bearer}, {@code body}, {@code query} ("a=1&b=2") and {@code ifMatch} may be null. */
  HttpResponse<Buffer> exchange(String method, String path, String bearer, String body, String query, String ifMatch) {
    HttpRequest<Buffer> r = http.request(HttpMethod.valueOf(method), port, path + (query == null ? "" : "?" + query));
    if (bearer != null) r.bearerTokenAuthentication(bearer);
    if (body != null) r.putHeader("Content-Type", "application/json");
    if (ifMatch != null) r.putHeader("If-Match", ifMatch);
    HttpResponse<Buffer> resp = http.send(r, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    SimpleRequest.Builder req = new SimpleRequest.Builder(Request.Method.valueOf(method), path);
    if (query != null) {
      for (String kv : query.split("&")) {
        String[] p = kv.split("=", 2);
        req.withQueryParam(p[0], p[1]);
      }
    }
    if (bearer != null) req.withHeader("Authorization", "Bearer " + bearer);
    if (ifMatch != null) req.withHeader("If-Match", ifMatch);
    if (body != null) req.withContentType("application/json").withBody(body);
    SimpleResponse.Builder res = SimpleResponse.Builder.status(resp.statusCode());
    resp.headers().forEach(h -> res.withHeader(h.getKey(), h.getValue()));
    if (resp.body() != null) res.withBody(resp.bodyAsString());
    // a request that is wrong on purpose only has its answer checked
    ValidationReport report = resp.statusCode() >= 400
        ? validator.validateResponse(path, Request.Method.valueOf(method), res.build())
        : validator.validate(req.build(), res.build());
    for (ValidationReport.Message m : report.getMessages()) {
      if (m.getLevel() == ValidationReport.Level.ERROR) {
        findings.add(method + " " + path + " -> " + resp.statusCode() + ": " + m.getKey() + " " + m.getMessage());
      }
    }
    return resp;
  }
}
