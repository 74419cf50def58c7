package io.meshplane.audit;

/**
 * What an audited action was done to: its type ({@code node}, {@code token}, {@code user}, ...), its id
 * and, when the action knows it, its name at the time (null otherwise), which the trail shows next to the id.
 */
public record Target(String type, String id, String name) {
  public static Target of(String type, String id, String name) {
    return new Target(type, id, name);
  }
}
