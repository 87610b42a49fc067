"""How rollouts and evaluations look in a terminal, and the commands that show them (`get`,
`status`, `history`)."""
