package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.atlassian.oai.validator.report.MessageResolver;
import com.atlassian.oai.validator.report.ValidationReport;
import com.atlassian.oai.validator.schema.SchemaValidator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.swagger.v3.core.util.Json;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.media.Schema;
import io.swagger.v3.parser.OpenAPIV3Parser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every example in openapi.yaml is valid against its schema: an {@code example} or each
 * {@code examples} entry of a media type, parameter or header against its {@code schema}, and a
 * schema's own {@code example} against that schema. Checked with the validator the contract tests use
 * (Atlassian's swagger-request-validator), on the document as written, so an example that lacks a
 * required field (a node record without {@code policy_sync.acknowledged_at}) fails here, named by
 * its JSON pointer.
 */
class OpenApiExamplesContractTest {
  static final Path DOCUMENT = Path.of("src/main/resources/openapi.yaml");
  /** The keywords under which a schema holds one schema. */
  static final Set<String> SUBSCHEMA = Set.of("items", "additionalProperties", "not");
  /** The keywords under which a schema holds several: a list ({@code allOf}, …) or, for {@code properties}, an object of them. */
  static final Set<String> SUBSCHEMAS = Set.of("allOf", "oneOf", "anyOf", "properties");

  static JsonNode doc;
  static SchemaValidator validator;

  @BeforeAll
  static void read() throws IOException {
    String text = Files.readString(DOCUMENT);
    doc = new ObjectMapper(new YAMLFactory()).readTree(text);
    OpenAPI api = new OpenAPIV3Parser().readContents(text).getOpenAPI();
    validator = new SchemaValidator(api, new MessageResolver());
  }

  @Test
  void everyExampleIsValidAgainstItsSchema() {
    List<String> findings = new ArrayList<>();
    int checked = walk(doc, "", false, findings);
    assertEquals(List.of(), findings, "examples that do not match their schema");
    assertEquals(examples(doc), checked, "the walk checked fewer examples than the document has");
  }

  /** The examples of a node record must carry every field the Node schema requires (it once lacked policy_sync.acknowledged_at). */
  @Test
  void anExampleLackingARequiredFieldIsFound() {
    JsonNode node = doc.at("/paths/~1v1~1nodes/get/responses/200/content/application~1json/example/items/0").deepCopy();
    assertTrue(node.isObject(), "the node list's example moved");
    List<String> none = new ArrayList<>();
    check(node, doc.at("/components/schemas/Node"), "(the node list's first item)", none);
    assertEquals(List.of(), none);
    ((com.fasterxml.jackson.databind.node.ObjectNode) node.get("policy_sync")).remove("acknowledged_at");
    List<String> findings = new ArrayList<>();
    check(node, doc.at("/components/schemas/Node"), "(a node record without policy_sync.acknowledged_at)", findings);
    assertEquals(1, findings.size(), findings.toString());
    assertTrue(findings.get(0).contains("acknowledged_at"), findings.get(0));
  }

  /** How many examples the document holds: each {@code example}, and each entry of each {@code examples}. */
  private static int examples(JsonNode n) {
    int count = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getKey().equals("properties") && e.getValue().isObject()) {
        // property names are data, not keywords: a property named "examples" (PolicyImpactPeers) holds a schema
        for (JsonNode property : e.getValue()) count += examples(property);
      } else if (e.getKey().equals("example")) {
        count++;
      } else if (e.getKey().equals("examples") && e.getValue().isObject()) {
        count += e.getValue().size();
      } else {
        count += examples(e.getValue());
      }
    }
    for (int i = 0; n.isArray() && i < n.size(); i++) count += examples(n.get(i));
    return count;
  }

  /** Visits {@code n} at {@code at}; {@code schema}: whether {@code n} is a schema. Returns how many examples were checked. */
  private static int walk(JsonNode n, String at, boolean schema, List<String> findings) {
    if (!n.isObject()) {
      if (!n.isArray()) return 0;
      int count = 0;
      for (int i = 0; i < n.size(); i++) count += walk(n.get(i), at + "/" + i, false, findings);
      return count;
    }
    int count = 0;
    if (schema && n.has("example")) {
      check(n.get("example"), n, at + "/example", findings);
      count++;
    } else if (!schema && n.has("schema") && n.get("schema").isObject()) {
      // a media type, a parameter or a header
      if (n.has("example")) {
        check(n.get("example"), n.get("schema"), at + "/example", findings);
        count++;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = n.path("examples").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        JsonNode example = e.getValue().has("$ref") ? doc.at(e.getValue().get("$ref").asText().substring(1)) : e.getValue();
        check(example.get("value"), n.get("schema"), at + "/examples/" + e.getKey() + "/value", findings);
        count++;
      }
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String key = e.getKey();
      String next = at + "/" + key.replace("~", "~0").replace("/", "~1");
      // data is not walked: an example's value (or a default, an enum) may hold any key
      if (Set.of("example", "examples", "default", "enum").contains(key)) continue;
      boolean child = key.equals("schema") || at.equals("/components/schemas") || (schema && SUBSCHEMA.contains(key));
      if (schema && SUBSCHEMAS.contains(key)) {
        JsonNode group = e.getValue();
        if (group.isArray()) {
          for (int i = 0; i < group.size(); i++) count += walk(group.get(i), next + "/" + i, true, findings);
        } else {
          for (Iterator<Map.Entry<String, JsonNode>> p = group.fields(); p.hasNext(); ) {
            Map.Entry<String, JsonNode> prop = p.next();
            count += walk(prop.getValue(), next + "/" + prop.getKey(), true, findings);
          }
        }
        continue;
      }
      count += walk(e.getValue(), next, child, findings);
    }
    return count;
  }

  private static void check(JsonNode example, JsonNode schemaNode, String at, List<String> findings) {
    if (example == null) {
      findings.add(at + ": no value");
      return;
    }
    Schema<?> schema = Json.mapper().convertValue(schemaNode, Schema.class);
    ValidationReport report = validator.validate(() -> example, schema, "example");
    for (ValidationReport.Message m : report.getMessages()) {
      if (m.getLevel() == ValidationReport.Level.ERROR) findings.add(at + ": " + m.getMessage());
    }
  }
}
