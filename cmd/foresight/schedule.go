package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/spf13/cobra"
)

func newSchedule() *cobra.Command {
	var file, cycleFile string
	cmd := &cobra.Command{
		Use:   "schedule --config FILE --cycle FILE.json",
		Short: "Run one cycle from a JSON snapshot through the real plugins and print its decision trace",
		Long: "schedule reads a cycle snapshot (request, endpoints with state and, when the config has no\n" +
			"producer, predictions; optional now and seed), runs it through the configured pipeline and\n" +
			"prints the decision trace as JSON: per stage the kept endpoints, scores, verdict and pick order.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := readCycle(cycleFile)
			if err != nil {
				return err
			}
			p, err := buildPipeline(cmd.Context(), file)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(p.Run(cmd.Context(), c))
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "pipeline config (YAML)")
	cmd.Flags().StringVar(&cycleFile, "cycle", "", "cycle snapshot (JSON)")
	_ = cmd.MarkFlagRequired("config")
	_ = cmd.MarkFlagRequired("cycle")
	return cmd
}

// readCycle decodes a cycle snapshot strictly: unknown fields and duplicate endpoint ids are errors.
func readCycle(file string) (*sdk.Cycle, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading cycle: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c sdk.Cycle
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, jsonErrorAt(data, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: trailing data after the cycle object", file)
	}
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("%s: endpoints[%d]: missing id", file, i)
		case seen[e.ID]:
			return nil, fmt.Errorf("%s: endpoints[%d]: duplicate id %q", file, i, e.ID)
		}
		seen[e.ID] = true
	}
	return &c, nil
}

// jsonErrorAt adds the line number to a JSON decoding error when it carries an offset.
func jsonErrorAt(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", bytes.Count(data[:min(int(off), len(data))], []byte("\n"))+1, err)
}
