#!/usr/bin/node
// Command main serves the label-selector-filter plugin to a Foresight host. The build copies the
// plugin's VERSION beside this file, where readVersion finds it.
import { readVersion, serve } from "@foresight/plugin-sdk";
import { LabelSelectorFilter } from "./label-filter";

serve(new LabelSelectorFilter(), readVersion(__dirname));
