"""Dataset tables (shadow and production), owned by neither stage."""
