package proxy

import "github.com/foresight-router/foresight/host/openai"

// rewriteModel sends the request under another model than the client named, as the inference
// extension's picker does: the x-gateway-model-name-rewrite header names it, and a rule of the
// pool's InferenceModelRewrite resources (Options.ModelRewrite), matched on the client's model,
// overrides the header. The candidates are then the endpoints that serve the new model, and the
// answer carries the client's name back (rename). It returns the rule that chose the model ("" for
// the header or no rewrite).
func (s *Server) rewriteModel(req *openai.Request, m meta) (rule string) {
	target := m.modelRewrite
	if s.o.ModelRewrite != nil {
		if t, r, ok := s.o.ModelRewrite(req.Model); ok && t != "" {
			target, rule = t, r
		}
	}
	if target != "" && target != req.Model {
		req.SetModel(target)
	}
	return rule
}

// rename is what turns the model the endpoint answers under back into the client's, in every
// event of a stream and in a whole answer; the zero rename when the request was not rewritten.
func (x *exchange) rename() openai.ModelRename {
	if x.req.ClientModel == "" || x.req.Model == x.req.ClientModel { // not rewritten, or not read (RouteOpaque)
		return openai.ModelRename{}
	}
	return openai.ModelRename{From: x.req.Model, To: x.req.ClientModel}
}
