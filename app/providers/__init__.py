"""Payment providers behind one small interface, and the simulator that serves sandbox and demo."""
