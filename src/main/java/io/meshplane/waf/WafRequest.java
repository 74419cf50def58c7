package io.meshplane.waf;

import java.util.List;
import java.util.Map;

/**
 * What the WAF is shown of one request, as the edge (or a preview sample) has it: nothing parsed yet.
 *
 * @param method the request method as sent
 * @param target the request target as sent: path and query, still percent-encoded
 * @param headers the header fields in order, names as sent (repeated names repeated)
 * @param clientIp the client's address (an IP literal), or empty
 * @param body the first bytes of the body (at most {@link RequestModel#BODY_PREFIX} are read), never null
 * @param bodySize the body's full size in bytes as known (Content-Length, or bytes seen), 0 for none
 * @param meshIdentity the caller's mesh identity when it came through the mesh, else empty
 */
record WafRequest(String method, String target, List<Map.Entry<String, String>> headers, String clientIp, byte[] body,
    long bodySize, String meshIdentity) {
  public WafRequest {
    method = method == null ? "" : method;
    target = target == null ? "/" : target;
    headers = headers == null ? List.of() : headers;
    clientIp = clientIp == null ? "" : clientIp;
    body = body == null ? new byte[0] : body;
    meshIdentity = meshIdentity == null ? "" : meshIdentity;
  }
}
