
5
outConst*
dtype0*
valueB€€€€: