package io.meshplane.app;

/** The HTTP components one process can run (ARCHITECTURE.md); {@code run} starts both unless told otherwise. */
public enum Component {
  COORDINATOR, PANEL
}
