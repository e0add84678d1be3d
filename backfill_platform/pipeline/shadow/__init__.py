"""Shadow tables: what each dataset version computes, validated before anything reaches production."""
