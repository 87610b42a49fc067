"""Local test bed: a throwaway control plane, inference-server doubles and a traffic driver."""
