"""modelgate: metric-gated canary rollouts for ML and LLM inference deployments on Kubernetes."""

__version__ = "0.1.0"

API_GROUP = "modelgate.io"
API_VERSION = "v1alpha1"
KIND = "ModelRollout"
PLURAL = "modelrollouts"
EVALUATION_KIND = "ModelEvaluation"
EVALUATION_PLURAL = "modelevaluations"
