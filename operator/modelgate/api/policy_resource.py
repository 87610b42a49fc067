"""The ModelRolloutPolicy and ClusterModelRolloutPolicy resources as kubectl shows them."""

from modelgate.api.resource import PrinterColumn

DESCRIPTION = (
    "ModelRolloutPolicy holds the defaults of a ModelRollout's plan (steps, analysis, gate, rollback, "
    "progress deadlines, capacity, watch window, notifications) for the rollouts of its namespace that "
    "name it in spec.policyRef; a section a rollout sets replaces the policy's."
)
CLUSTER_DESCRIPTION = (
    "ClusterModelRolloutPolicy holds the defaults of a ModelRollout's plan, written once by the "
    "platform team for the rollouts of every namespace that name it in spec.policyRef; a section a "
    "rollout sets replaces the policy's."
)
SHORT_NAMES = ("mrp",)
CLUSTER_SHORT_NAMES = ("cmrp",)
CATEGORIES = ("modelgate",)
PRINTER_COLUMNS = (
    PrinterColumn("Generation", "integer", ".metadata.generation", "The spec's generation rollouts pin."),
    PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time since the policy was created."),
)
