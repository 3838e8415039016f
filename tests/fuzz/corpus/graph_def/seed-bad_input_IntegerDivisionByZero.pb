
0
xConst*
dtype0*
valueB:

yPlaceholder*
dtype0

outFloorDivxy*
T0