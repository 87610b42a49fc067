// Command inference-sim serves llm-d's vLLM simulator (github.com/llm-d/llm-d-inference-sim, pinned in
// go.mod) on one address. The simulator's own command binds every interface on --port; the bed's model
// Pods each own a loopback IP, and every listener of the bed stays on loopback. So this command reads
// the simulator's flags as upstream does and serves its HTTP API on MODELGATE_SIM_HOST:--port
// (127.0.0.1 when unset). Nothing else differs: no gRPC listener, one data-parallel rank.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/llm-d/llm-d-inference-sim/cmd/signals"
	"github.com/llm-d/llm-d-inference-sim/pkg/common"
	"github.com/llm-d/llm-d-inference-sim/pkg/communication"
	vllmsim "github.com/llm-d/llm-d-inference-sim/pkg/llm-d-inference-sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "inference-sim:", err)
		os.Exit(1)
	}
}

func run() error {
	logger := klog.Background()
	ctx := signals.SetupSignalHandler(klog.NewContext(context.Background(), logger))
	config, err := common.ParseCommandParamsAndLoadConfig()
	if err != nil {
		return fmt.Errorf("reading the simulator's flags: %w", err)
	}
	if config.DPSize > 1 {
		return fmt.Errorf("--data-parallel-size %d: one rank per process here", config.DPSize)
	}
	host := os.Getenv("MODELGATE_SIM_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("MODELGATE_SIM_HOST %q is not a loopback IP address", host)
	}
	listener, err := net.Listen("tcp4", net.JoinHostPort(host, strconv.Itoa(config.Port)))
	if err != nil {
		return err
	}
	simulators, err := vllmsim.Start(ctx, config, logger)
	if err != nil {
		return fmt.Errorf("starting the simulator: %w", err)
	}
	simulator := simulators[0]
	go func() { // upstream's shutdown: stop taking work, then close the listener, which ends Serve
		<-ctx.Done()
		simulator.Stop()
		_ = listener.Close()
	}()
	err = communication.New(logger, simulator).StartHTTPServer(ctx, listener)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
